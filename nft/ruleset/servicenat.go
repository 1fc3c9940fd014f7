package ruleset

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The service proxy's primitives: matching a service address, DNAT through
// maps, remembering a client's endpoint, rejecting.

// AddrIs matches the source (Src) or destination address against one address.
type AddrIs struct {
	V6, Src bool
	Addr    netip.Addr
}

func (m AddrIs) text() string {
	p, f, _, _ := addrField(m.V6, m.Src)
	return fmt.Sprintf("%s %s %s", p, f, m.Addr)
}

func (m AddrIs) compile(c *compiler) {
	_, _, off, n := addrField(m.V6, m.Src)
	c.family(m.V6)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: m.Addr.AsSlice()})
}

// CtStatusDNAT matches connections whose destination was translated.
type CtStatusDNAT struct{}

// ipsDstNAT is IPS_DST_NAT of the conntrack status bits.
const ipsDstNAT = 1 << 5

func (CtStatusDNAT) text() string { return "ct status dnat" }
func (CtStatusDNAT) compile(c *compiler) {
	c.add(&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(ipsDstNAT), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)})
}

// Reject answers with an ICMP (ICMPv6) port-unreachable, which a TCP client
// sees as a refused connection at once. The rule must have matched the
// family before.
type Reject struct{ V6 bool }

func (v Reject) text() string {
	if v.V6 {
		return "reject with icmpv6 port-unreachable"
	}
	return "reject with icmp port-unreachable"
}

func (v Reject) compile(c *compiler) {
	code := uint8(3) // ICMP_PORT_UNREACH
	if v.V6 {
		code = 4 // ICMPV6_PORT_UNREACH
	}
	c.add(&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: code})
}

// addrPortRegs are the 32-bit registers a concatenation's second field starts
// in after an address of the family, and the NAT family.
func addrPortRegs(v6 bool) (next uint32, family uint32) {
	if v6 {
		return unix.NFT_REG32_04, unix.NFPROTO_IPV6
	}
	return unix.NFT_REG32_01, unix.NFPROTO_IPV4
}

// DNATSlot translates to the endpoint in slot `numgen random mod Slots` of
// the service address, protocol and port in an endpoint-slot map:
// `dnat ip to ip daddr . meta l4proto . th dport . numgen random mod N map @m`.
// Proto is the protocol an earlier match of the rule required (nft then
// names the port `tcp dport`), 0 for none.
type DNATSlot struct {
	V6    bool
	Proto uint8
	Slots uint32
	Map   string
}

func (v DNATSlot) text() string {
	p, _, _, _ := addrField(v.V6, false)
	return fmt.Sprintf("dnat %s to %s daddr . meta l4proto . %s . numgen random mod %d map @%s", p, p, portField(v.Proto), v.Slots, v.Map)
}

func (v DNATSlot) compile(c *compiler) {
	_, _, off, n := addrField(v.V6, false)
	next, fam := addrPortRegs(v.V6)
	c.family(v.V6)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: next},
		&expr.Payload{DestRegister: next + 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Numgen{Register: next + 2, Modulus: v.Slots, Type: unix.NFT_NG_RANDOM},
		&expr.Lookup{SourceRegister: 1, DestRegister: 1, IsDestRegSet: true, SetName: v.Map},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: fam, RegAddrMin: 1, RegAddrMax: 1,
			RegProtoMin: next, RegProtoMax: next, Specified: true})
}

// DNATSticky translates to the endpoint address a dynamic map remembers for
// the client, on port Port: `dnat ip to ip saddr map @m:8080`. No entry, no
// match.
type DNATSticky struct {
	V6   bool
	Map  string
	Port uint16
}

func (v DNATSticky) text() string {
	p, _, _, _ := addrField(v.V6, true)
	return fmt.Sprintf("dnat %s to %s saddr map @%s:%d", p, p, v.Map, v.Port)
}

func (v DNATSticky) compile(c *compiler) {
	_, _, off, n := addrField(v.V6, true)
	_, fam := addrPortRegs(v.V6)
	c.family(v.V6)
	// The port is a value of its own, not part of a concatenation: nft
	// puts it in the next 128-bit register whatever the family.
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Lookup{SourceRegister: 1, DestRegister: 1, IsDestRegSet: true, SetName: v.Map},
		&expr.Immediate{Register: 2, Data: be16(v.Port)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: fam, RegAddrMin: 1, RegAddrMax: 1,
			RegProtoMin: 2, RegProtoMax: 2, Specified: true})
}

// RememberClient adds or refreshes the client's entry in a dynamic map from
// source to (translated) destination address: `update @m { ip saddr : ip
// daddr }`.
type RememberClient struct {
	V6  bool
	Map string
}

func (m RememberClient) text() string {
	p, _, _, _ := addrField(m.V6, true)
	return fmt.Sprintf("update @%s { %s saddr : %s daddr }", m.Map, p, p)
}

func (m RememberClient) compile(c *compiler) {
	_, _, soff, n := addrField(m.V6, true)
	_, _, doff, _ := addrField(m.V6, false)
	c.family(m.V6)
	// The data goes to the next 128-bit register, as nft allocates it.
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: soff, Len: n},
		&expr.Payload{DestRegister: 2, Base: expr.PayloadBaseNetworkHeader, Offset: doff, Len: n},
		&expr.Dynset{SrcRegKey: 1, SrcRegData: 2, SetName: m.Map, Operation: unix.NFT_DYNSET_OP_UPDATE})
}
