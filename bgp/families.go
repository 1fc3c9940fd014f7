package bgp

import (
	"net/netip"
	"strings"

	"github.com/nfrouter/nfrouter/model"
)

// Families is a set of the address families a session carries: the IPv4
// unicast and IPv6 unicast AFI/SAFIs.
type Families uint8

// The families of Families.
const (
	IPv4 Families = 1 << iota
	IPv6
)

// familiesOf returns the family of a.
func familiesOf(a netip.Addr) Families {
	if a.Unmap().Is4() {
		return IPv4
	}
	return IPv6
}

func (f Families) String() string {
	var out []string
	if f&IPv4 != 0 {
		out = append(out, "ipv4")
	}
	if f&IPv6 != 0 {
		out = append(out, "ipv6")
	}
	return strings.Join(out, "+")
}

// FamilyAddrs are a node's addresses, at most one per family: where it peers
// from, and the next hops of the paths it originates (an IPv4 prefix has the
// IPv4 address as next hop, an IPv6 prefix the IPv6 one).
type FamilyAddrs struct {
	V4, V6 netip.Addr
}

// AddrsOf returns the addresses a node peers from: its first internal
// address of each family; a node without internal addresses uses its first
// external address of each family.
func AddrsOf(n *model.Node) FamilyAddrs {
	addrs := n.InternalIPs
	if len(addrs) == 0 {
		addrs = n.ExternalIPs
	}
	var out FamilyAddrs
	for _, a := range addrs {
		a = a.Unmap()
		switch {
		case a.Is4() && !out.V4.IsValid():
			out.V4 = a
		case a.Is6() && !out.V6.IsValid():
			out.V6 = a
		}
	}
	return out
}

// Primary is the IPv4 address when there is one, else the IPv6 one: the
// address a node is named by in logs and the source of its router ID.
func (f FamilyAddrs) Primary() netip.Addr {
	if f.V4.IsValid() {
		return f.V4
	}
	return f.V6
}

// For returns the address of a's family; invalid when there is none.
func (f FamilyAddrs) For(a netip.Addr) netip.Addr {
	if a.Unmap().Is4() {
		return f.V4
	}
	return f.V6
}

// Has reports whether a is one of the addresses.
func (f FamilyAddrs) Has(a netip.Addr) bool {
	return a.IsValid() && (a == f.V4 || a == f.V6)
}

// List returns the valid addresses, IPv4 first.
func (f FamilyAddrs) List() []netip.Addr {
	var out []netip.Addr
	for _, a := range []netip.Addr{f.V4, f.V6} {
		if a.IsValid() {
			out = append(out, a)
		}
	}
	return out
}

// Families returns the families the node has an address of.
func (f FamilyAddrs) Families() Families {
	var out Families
	for _, a := range f.List() {
		out |= familiesOf(a)
	}
	return out
}
