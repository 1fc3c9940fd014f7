package ipvs

import (
	"net/netip"

	"github.com/nfrouter/nfrouter/model"
)

// destinations picks the destinations of a virtual service at an address of
// family is4: the ready endpoints, or, when none is ready, those that are
// serving and terminating (so that a rolling update does not drop traffic while
// the old pods still serve); with local, only this node's endpoints count, both
// for the ready set and for the fallback. The result is sorted, as eps is.
func destinations(eps model.Endpoints, is4, local bool, nodeName string) []Dest {
	var ready, fallback []Dest
	for _, e := range eps {
		if e.Addr.Is4() != is4 || (local && e.Node != nodeName) {
			continue
		}
		d := Dest{Addr: e.Addr, Port: e.Port}
		switch {
		case e.Ready:
			ready = append(ready, d)
		case e.Serving && e.Terminating:
			fallback = append(fallback, d)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return fallback
}

// nodePortAddrs are the addresses a NodePort listens on: the node's first
// internal address of each family (its node IPs; external ones when it has no
// internal one), or with all every address the Node object lists.
func nodePortAddrs(n *model.Node, all bool) []netip.Addr {
	if n == nil {
		return nil
	}
	if all {
		out := append([]netip.Addr(nil), n.InternalIPs...)
		for _, a := range n.ExternalIPs {
			if !containsAddr(out, a) {
				out = append(out, a)
			}
		}
		return out
	}
	var out []netip.Addr
	for _, is4 := range []bool{true, false} {
		if a, ok := firstOfFamily(n.InternalIPs, is4); ok {
			out = append(out, a)
		} else if a, ok := firstOfFamily(n.ExternalIPs, is4); ok {
			out = append(out, a)
		}
	}
	return out
}

func firstOfFamily(addrs []netip.Addr, is4 bool) (netip.Addr, bool) {
	for _, a := range addrs {
		if a.Is4() == is4 {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func containsAddr(addrs []netip.Addr, a netip.Addr) bool {
	for _, b := range addrs {
		if a == b {
			return true
		}
	}
	return false
}

func hasFamily(addrs []netip.Addr, is4 bool) bool {
	_, ok := firstOfFamily(addrs, is4)
	return ok
}
