package ruleset

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Rule is one rule: all matches must hold, then the verdict applies.
type Rule struct {
	Matches []Match
	Verdict Verdict
}

// Text renders the rule as `nft list` prints it.
func (r Rule) Text() string {
	parts := make([]string, 0, len(r.Matches)+1)
	for _, m := range r.Matches {
		parts = append(parts, m.text())
	}
	if r.Verdict != nil {
		parts = append(parts, r.Verdict.text())
	}
	return strings.Join(parts, " ")
}

// Exprs compiles the rule into the expressions nft generates for its text.
func (r Rule) Exprs() []expr.Any {
	var c compiler
	for _, m := range r.Matches {
		m.compile(&c)
	}
	if r.Verdict != nil {
		r.Verdict.compile(&c)
	}
	return c.out
}

// compiler accumulates expressions and remembers which network-protocol
// dependency the rule has already checked: nft checks `meta nfproto` once per
// rule in an inet table, before the first ip or ip6 payload.
type compiler struct {
	out    []expr.Any
	nfprot byte
}

func (c *compiler) add(e ...expr.Any) { c.out = append(c.out, e...) }

func (c *compiler) family(v6 bool) {
	p := byte(unix.NFPROTO_IPV4)
	if v6 {
		p = unix.NFPROTO_IPV6
	}
	if c.nfprot == p {
		return
	}
	c.nfprot = p
	c.add(&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}})
}

// Match is one condition of a rule.
type Match interface {
	text() string
	compile(*compiler)
}

// Verdict ends a rule.
type Verdict interface {
	text() string
	compile(*compiler)
}

// CtEstablished matches replies and related traffic of known connections.
type CtEstablished struct{}

func (CtEstablished) text() string { return "ct state established,related" }
func (CtEstablished) compile(c *compiler) {
	c.add(&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)})
}

// AddrIn matches the source (Src) or destination address against a named set;
// Not inverts it.
type AddrIn struct {
	V6, Src, Not bool
	Set          string
}

func addrField(v6, src bool) (proto, field string, off, n uint32) {
	switch {
	case !v6 && src:
		return "ip", "saddr", 12, 4
	case !v6:
		return "ip", "daddr", 16, 4
	case src:
		return "ip6", "saddr", 8, 16
	}
	return "ip6", "daddr", 24, 16
}

func (m AddrIn) text() string {
	p, f, _, _ := addrField(m.V6, m.Src)
	op := ""
	if m.Not {
		op = "!= "
	}
	return fmt.Sprintf("%s %s %s@%s", p, f, op, m.Set)
}

func (m AddrIn) compile(c *compiler) {
	_, _, off, n := addrField(m.V6, m.Src)
	c.family(m.V6)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Lookup{SourceRegister: 1, SetName: m.Set, Invert: m.Not})
}

// L4Proto matches a transport protocol.
type L4Proto struct{ Proto uint8 }

func (m L4Proto) text() string { return "meta l4proto " + protoName(m.Proto) }
func (m L4Proto) compile(c *compiler) {
	c.add(&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{m.Proto}})
}

// DPort matches a transport protocol and a destination port or inclusive
// range First..Last (Last 0 or equal to First for one port).
type DPort struct {
	Proto       uint8
	First, Last uint16
}

func (m DPort) text() string {
	if m.Last > m.First {
		return fmt.Sprintf("%s dport %d-%d", protoName(m.Proto), m.First, m.Last)
	}
	return fmt.Sprintf("%s dport %d", protoName(m.Proto), m.First)
}

func (m DPort) compile(c *compiler) {
	L4Proto{m.Proto}.compile(c)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
	if m.Last > m.First {
		c.add(&expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: be16(m.First)},
			&expr.Cmp{Op: expr.CmpOpLte, Register: 1, Data: be16(m.Last)})
		return
	}
	c.add(&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(m.First)})
}

// DestPortIn matches destination address, protocol and port together against an
// address-protocol-port set: how ports given by name, resolved per pod, match.
// With Proto, only packets of that protocol match (nft lists the port as
// `tcp dport` then).
type DestPortIn struct {
	V6    bool
	Proto uint8
	Set   string
}

func (m DestPortIn) text() string {
	p, _, _, _ := addrField(m.V6, false)
	return p + " daddr . meta l4proto . " + portField(m.Proto) + " @" + m.Set
}

// portField is how nft names a destination port of protocol proto (0: any).
func portField(proto uint8) string {
	if proto == 0 {
		return "th dport"
	}
	return protoName(proto) + " dport"
}

func (m DestPortIn) compile(c *compiler) {
	_, _, off, n := addrField(m.V6, false)
	// Concatenations use 32-bit registers: the address fills NFT_REG32_00 (one
	// register for IPv4, four for IPv6), the protocol and port the next ones.
	next, _ := addrPortRegs(m.V6)
	c.family(m.V6)
	if m.Proto != 0 {
		L4Proto{m.Proto}.compile(c) // where nft puts `tcp dport`'s dependency
	}
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: next},
		&expr.Payload{DestRegister: next + 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: 1, SetName: m.Set})
}

// ICMPv6Type matches an ICMPv6 message type; Name is how nft prints it
// (nd-neighbor-solicit for 135, nd-neighbor-advert for 136).
type ICMPv6Type struct {
	Type uint8
	Name string
}

func (m ICMPv6Type) text() string { return "icmpv6 type " + m.Name }
func (m ICMPv6Type) compile(c *compiler) {
	c.family(true)
	L4Proto{unix.IPPROTO_ICMPV6}.compile(c)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{m.Type}})
}

// LogLimited sends packets to nflog group Group, at most 10 a minute with a
// burst of 10, as kube-router's NFLOG rule does, with Prefix (if any) as
// the log prefix. The rate is the rule's own: one LogLimited per chain
// limits that chain's log lines.
type LogLimited struct {
	Group  uint16
	Prefix string
}

func (m LogLimited) text() string {
	if m.Prefix != "" {
		return fmt.Sprintf("limit rate 10/minute burst 10 packets log prefix %q group %d", m.Prefix, m.Group)
	}
	return fmt.Sprintf("limit rate 10/minute burst 10 packets log group %d", m.Group)
}

func (m LogLimited) compile(c *compiler) {
	log := &expr.Log{Key: 1 << unix.NFTA_LOG_GROUP, Group: m.Group}
	if m.Prefix != "" {
		log.Key |= 1 << unix.NFTA_LOG_PREFIX
		log.Data = []byte(m.Prefix)
	}
	c.add(&expr.Limit{Type: expr.LimitTypePkts, Rate: 10, Unit: expr.LimitTimeMinute, Burst: 10}, log)
}

// Counter counts the packets and bytes that reach it. nft lists the
// current values; the rendering shows a fresh counter's.
type Counter struct{}

func (Counter) text() string        { return "counter packets 0 bytes 0" }
func (Counter) compile(c *compiler) { c.add(&expr.Counter{}) }

// Accept, Drop and Jump are the plain verdicts.
type (
	Accept struct{}
	Drop   struct{}
	Jump   struct{ Chain string }
)

func (Accept) text() string        { return "accept" }
func (Accept) compile(c *compiler) { c.add(&expr.Verdict{Kind: expr.VerdictAccept}) }
func (Drop) text() string          { return "drop" }
func (Drop) compile(c *compiler)   { c.add(&expr.Verdict{Kind: expr.VerdictDrop}) }
func (v Jump) text() string        { return "jump " + v.Chain }
func (v Jump) compile(c *compiler) { c.add(&expr.Verdict{Kind: expr.VerdictJump, Chain: v.Chain}) }

// AddrVmap looks the source or destination address up in a verdict map; no
// match means no verdict, and the chain goes on.
type AddrVmap struct {
	V6, Src bool
	Map     string
}

func (v AddrVmap) text() string {
	p, f, _, _ := addrField(v.V6, v.Src)
	return fmt.Sprintf("%s %s vmap @%s", p, f, v.Map)
}

func (v AddrVmap) compile(c *compiler) {
	_, _, off, n := addrField(v.V6, v.Src)
	c.family(v.V6)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
		&expr.Lookup{SourceRegister: 1, DestRegister: 0, IsDestRegSet: true, SetName: v.Map})
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// TCPMidStream matches TCP packets without SYN. After `ct state
// established,related accept` these are packets conntrack picked up in
// the middle of a connection it no longer knows (nf_conntrack_tcp_loose),
// in whichever direction the first one came.
type TCPMidStream struct{}

func (TCPMidStream) text() string { return "tcp flags ! syn" }
func (TCPMidStream) compile(c *compiler) {
	L4Proto{unix.IPPROTO_TCP}.compile(c)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{0x02}, Xor: []byte{0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0}})
}
