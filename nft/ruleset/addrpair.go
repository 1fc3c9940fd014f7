package ruleset

import "github.com/google/nftables/expr"

// AddrPairIn matches the source and destination address together against an
// address-pair set (`ip saddr . ip daddr @set`): how hairpin connections, a
// pod reaching itself through a service, are recognised after DNAT.
type AddrPairIn struct {
	V6  bool
	Set string
}

func (m AddrPairIn) text() string {
	p, _, _, _ := addrField(m.V6, false)
	return p + " saddr . " + p + " daddr @" + m.Set
}

func (m AddrPairIn) compile(c *compiler) {
	_, _, soff, n := addrField(m.V6, true)
	_, _, doff, _ := addrField(m.V6, false)
	// The second address fills the 32-bit registers after the first.
	next, _ := addrPortRegs(m.V6)
	c.family(m.V6)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: soff, Len: n},
		&expr.Payload{DestRegister: next, Base: expr.PayloadBaseNetworkHeader, Offset: doff, Len: n},
		&expr.Lookup{SourceRegister: 1, SetName: m.Set})
}
