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
	AddrPair4                         // ipv4_addr . ipv4_addr
	AddrPair6                         // ipv6_addr . ipv6_addr
	// AddrPort4 and AddrPort6 are the data of maps that translate to an
	// address and port.
	AddrPort4 // ipv4_addr . inet_service
	AddrPort6 // ipv6_addr . inet_service
	// EndpointSlot4 and EndpointSlot6 key maps of numbered endpoint slots:
	// address . protocol . port . slot, where the slot is what `numgen
	// random mod N` yields. The slot has no type of its own (nft's integer),
	// so such maps are declared with typeof (see Typeof).
	EndpointSlot4 // ipv4_addr . inet_proto . inet_service . integer
	EndpointSlot6 // ipv6_addr . inet_proto . inet_service . integer
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
	case AddrPair4:
		return "ipv4_addr . ipv4_addr"
	case AddrPair6:
		return "ipv6_addr . ipv6_addr"
	case AddrPort4:
		return "ipv4_addr . inet_service"
	case AddrPort6:
		return "ipv6_addr . inet_service"
	case EndpointSlot4:
		return "ipv4_addr . inet_proto . inet_service . integer"
	case EndpointSlot6:
		return "ipv6_addr . inet_proto . inet_service . integer"
	}
	return fmt.Sprintf("keytype-%d", uint8(k))
}

// V6 reports whether the key starts with an IPv6 address.
func (k KeyType) V6() bool {
	switch k {
	case Addr6, AddrProtoPort6, AddrPair6, AddrPort6, EndpointSlot6:
		return true
	}
	return false
}

// Typeof is how nft declares a key or data type that has no type name of
// its own: the expressions that produce it. "" for types declared by name.
func (k KeyType) Typeof() string {
	switch k {
	case EndpointSlot4:
		return "ip daddr . meta l4proto . th dport . numgen random mod 1"
	case EndpointSlot6:
		return "ip6 daddr . meta l4proto . th dport . numgen random mod 1"
	}
	return k.typeofProto(0)
}

// typeofProto is Typeof for data types whose port belongs to protocol
// proto: `tcp dport` rather than `th dport` (0: any protocol).
func (k KeyType) typeofProto(proto uint8) string {
	port := "th dport"
	if proto != 0 {
		port = protoName(proto) + " dport"
	}
	switch k {
	case AddrPort4:
		return "ip daddr . " + port
	case AddrPort6:
		return "ip6 daddr . " + port
	}
	return ""
}

// Element is one set or map element. Which fields count depends on the set:
// Addr for address sets, Addr..End (inclusive) for interval sets, Addr, Proto and
// Port for address-protocol-port sets, Addr and Peer for address-pair sets,
// Addr, Proto, Port and Slot for endpoint-slot maps; Jump is the data of
// verdict maps, Target that of address-and-port maps.
type Element struct {
	Addr, End netip.Addr
	Peer      netip.Addr // address-pair sets: the second address
	Proto     uint8
	Port      uint16
	Slot      uint16
	Jump      string         // verdict maps: the chain to jump to
	Target    netip.AddrPort // address-and-port maps: what the key maps to
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
	case e.Peer.IsValid():
		fmt.Fprintf(&b, "%s . %s", e.Addr, e.Peer)
	case e.Proto != 0 && e.Target.IsValid():
		fmt.Fprintf(&b, "%s . %s . %d . %d", e.Addr, protoName(e.Proto), e.Port, e.Slot)
	case e.Proto != 0:
		fmt.Fprintf(&b, "%s . %s . %d", e.Addr, protoName(e.Proto), e.Port)
	default:
		b.WriteString(e.Addr.String())
	}
	if e.Jump != "" {
		b.WriteString(" : jump " + e.Jump)
	}
	if e.Target.IsValid() {
		fmt.Fprintf(&b, " : %s . %d", e.Target.Addr(), e.Target.Port())
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
	if c := e.Peer.Compare(o.Peer); c != 0 {
		return c
	}
	if c := cmp.Compare(e.Proto, o.Proto); c != 0 {
		return c
	}
	if c := cmp.Compare(e.Port, o.Port); c != 0 {
		return c
	}
	if c := cmp.Compare(e.Slot, o.Slot); c != 0 {
		return c
	}
	if c := e.Target.Compare(o.Target); c != 0 {
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

// AddrKey is the address key type of a family.
func AddrKey(v6 bool) KeyType {
	if v6 {
		return Addr6
	}
	return Addr4
}

// AddrProtoPortKey is the address . protocol . port key type of a family.
func AddrProtoPortKey(v6 bool) KeyType {
	if v6 {
		return AddrProtoPort6
	}
	return AddrProtoPort4
}
