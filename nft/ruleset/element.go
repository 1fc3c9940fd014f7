package ruleset

import (
	"cmp"
	"fmt"
	"net/netip"
	"strings"
)

// KeyType is the key type of a set or map.
type KeyType uint8

// The key types nfrouter uses.
const (
	Addr4          KeyType = iota + 1 // ipv4_addr
	Addr6                             // ipv6_addr
	AddrProtoPort4                    // ipv4_addr . inet_proto . inet_service
	AddrProtoPort6                    // ipv6_addr . inet_proto . inet_service
)

func (k KeyType) String() string {
	switch k {
	case Addr4:
		return "ipv4_addr"
	case Addr6:
		return "ipv6_addr"
	case AddrProtoPort4:
		return "ipv4_addr . inet_proto . inet_service"
	case AddrProtoPort6:
		return "ipv6_addr . inet_proto . inet_service"
	}
	return fmt.Sprintf("keytype-%d", uint8(k))
}

// V6 reports whether the key starts with an IPv6 address.
func (k KeyType) V6() bool { return k == Addr6 || k == AddrProtoPort6 }

// Element is one set or map element. Which fields count depends on the set:
// Addr for address sets, Addr..End (inclusive) for interval sets, Addr, Proto and
// Port for address-protocol-port sets, and Jump for verdict maps.
type Element struct {
	Addr, End netip.Addr
	Proto     uint8
	Port      uint16
	Jump      string // verdict maps: the chain to jump to
}

// Range returns the interval element first..last.
func Range(first, last netip.Addr) Element { return Element{Addr: first, End: last} }

// Text renders the element as nft lists it.
func (e Element) Text() string {
	var b strings.Builder
	switch {
	case e.End.IsValid():
		if p, ok := prefixOf(e.Addr, e.End); ok {
			b.WriteString(p.String())
		} else if e.Addr == e.End {
			b.WriteString(e.Addr.String())
		} else {
			b.WriteString(e.Addr.String() + "-" + e.End.String())
		}
	case e.Proto != 0:
		fmt.Fprintf(&b, "%s . %s . %d", e.Addr, protoName(e.Proto), e.Port)
	default:
		b.WriteString(e.Addr.String())
	}
	if e.Jump != "" {
		b.WriteString(" : jump " + e.Jump)
	}
	return b.String()
}

// Compare orders elements by address, then the rest.
func (e Element) Compare(o Element) int {
	if c := e.Addr.Compare(o.Addr); c != 0 {
		return c
	}
	if c := e.End.Compare(o.End); c != 0 {
		return c
	}
	if c := cmp.Compare(e.Proto, o.Proto); c != 0 {
		return c
	}
	if c := cmp.Compare(e.Port, o.Port); c != 0 {
		return c
	}
	return strings.Compare(e.Jump, o.Jump)
}

// prefixOf returns the prefix that covers exactly first..last, if there is one.
func prefixOf(first, last netip.Addr) (netip.Prefix, bool) {
	for bits := 0; bits <= first.BitLen(); bits++ {
		p := netip.PrefixFrom(first, bits)
		if p.Masked().Addr() != first {
			continue
		}
		if lastOf(p) == last {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// lastOf returns the last address of a prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func protoName(p uint8) string {
	switch p {
	case 6:
		return "tcp"
	case 17:
		return "udp"
	case 132:
		return "sctp"
	}
	return fmt.Sprint(p)
}
