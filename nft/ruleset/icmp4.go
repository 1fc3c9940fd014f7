package ruleset

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ICMPv4Type matches an ICMP (IPv4) message type; Name is how nft prints it
// (echo-request for 8). It is ICMPv6Type's IPv4 twin.
type ICMPv4Type struct {
	Type uint8
	Name string
}

func (m ICMPv4Type) text() string { return "icmp type " + m.Name }
func (m ICMPv4Type) compile(c *compiler) {
	c.family(false)
	L4Proto{unix.IPPROTO_ICMP}.compile(c)
	c.add(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{m.Type}})
}
