package ipvs

import (
	"net/netip"
	"slices"

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

func hasFamily(addrs []netip.Addr, is4 bool) bool {
	return slices.ContainsFunc(addrs, func(a netip.Addr) bool { return a.Is4() == is4 })
}
