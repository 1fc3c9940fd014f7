package ipvs

import (
	"net/netip"
	"slices"

	"github.com/nfrouter/nfrouter/model"
)

// destinations are the destinations of a virtual service at an address of
// family is4: the local endpoints (model.Endpoints.Serving) or those of
// policy Cluster this node uses (model.Endpoints.ClusterServing, which
// follows topology), as Dests.
func destinations(eps model.Endpoints, is4, local bool, node *model.Node, nodeName string, dist model.TrafficDistribution) []Dest {
	serving := eps.Serving(is4, true, nodeName)
	if !local {
		serving = eps.ClusterServing(is4, node, dist)
	}
	var out []Dest
	for _, e := range serving {
		out = append(out, Dest{Addr: e.Addr, Port: e.Port})
	}
	return out
}

func hasFamily(addrs []netip.Addr, is4 bool) bool {
	return slices.ContainsFunc(addrs, func(a netip.Addr) bool { return a.Is4() == is4 })
}
