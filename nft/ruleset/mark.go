package ruleset

import (
	"fmt"

	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
)

// MarkSet sets bits in the packet mark, keeping the others: how a chain
// that decides on NAT tells a later hook to masquerade.
type MarkSet struct{ Bits uint32 }

func (m MarkSet) text() string { return fmt.Sprintf("meta mark set meta mark | 0x%08x", m.Bits) }
func (m MarkSet) compile(c *compiler) {
	c.add(&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^m.Bits), Xor: binaryutil.NativeEndian.PutUint32(m.Bits)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1})
}

// MarkClear flips bits of the packet mark that a MarkHas matched off again,
// so that a packet passing the hook twice is not masqueraded twice.
type MarkClear struct{ Bits uint32 }

func (m MarkClear) text() string { return fmt.Sprintf("meta mark set meta mark ^ 0x%08x", m.Bits) }
func (m MarkClear) compile(c *compiler) {
	c.add(&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(0xffffffff), Xor: binaryutil.NativeEndian.PutUint32(m.Bits)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1})
}

// MarkHas matches packets whose mark has all of Bits set.
type MarkHas struct{ Bits uint32 }

func (m MarkHas) text() string { return fmt.Sprintf("meta mark & 0x%08x == 0x%08x", m.Bits, m.Bits) }
func (m MarkHas) compile(c *compiler) {
	c.add(&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(m.Bits), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(m.Bits)})
}

// Masquerade source-NATs to the address of the outgoing interface (nat
// postrouting chains only).
type Masquerade struct{}

func (Masquerade) text() string        { return "masquerade" }
func (Masquerade) compile(c *compiler) { c.add(&expr.Masq{}) }

// MasqueradeMark is the packet mark bit with which NAT chains ask the
// postrouting hook to masquerade, kube-proxy's and kube-router's 0x4000.
const MasqueradeMark = 0x4000
