package ipvs

import (
	"net/netip"

	"github.com/nfrouter/nfrouter/model"
)

// destinations are the destinations of a virtual service at an address of
// family is4: model.Endpoints.Serving, as Dests.
func destinations(eps model.Endpoints, is4, local bool, nodeName string) []Dest {
	var out []Dest
	for _, e := range eps.Serving(is4, local, nodeName) {
		out = append(out, Dest{Addr: e.Addr, Port: e.Port})
	}
	return out
}

// nodePortAddrs are the addresses a NodePort listens on (model.Node.NodePortAddrs).
func nodePortAddrs(n *model.Node, all bool) []netip.Addr { return n.NodePortAddrs(all) }

func firstOfFamily(addrs []netip.Addr, is4 bool) (netip.Addr, bool) {
	for _, a := range addrs {
		if a.Is4() == is4 {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func hasFamily(addrs []netip.Addr, is4 bool) bool {
	_, ok := firstOfFamily(addrs, is4)
	return ok
}
