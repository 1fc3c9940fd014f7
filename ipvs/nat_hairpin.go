package ipvs

import (
	"net/netip"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Hairpin: a pod that reaches itself through a service address gets its own
// packet back with its own address as the source, and answers itself
// directly instead of through the service: the connection it opened never
// sees a reply. Masquerading such a connection makes the pod answer the
// node, which IPVS translates back. After IPVS's DNAT the connection goes
// from a local endpoint to itself, so the set holds endpoint . endpoint
// pairs of the local endpoints of services that want hairpin (the
// kube-router.io/service.hairpin annotation, or all with --hairpin-mode),
// and one rule in ipvs-postrouting masquerades them. The pairs do not name
// the service: an endpoint with hairpin for one service has it through all
// of them (kube-router's iptables rules matched the virtual service too).
// That costs nothing: without masquerading, such a connection fails.

func hairpinSetDef(v6 bool) ruleset.Set {
	typ := ruleset.AddrPair4
	if v6 {
		typ = ruleset.AddrPair6
	}
	return ruleset.Set{Name: hairpinSet(v6), Type: typ, Comment: "local endpoints of hairpin services, as source . destination"}
}

func hairpinRule(v6 bool) ruleset.Rule {
	return ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrPairIn{V6: v6, Set: hairpinSet(v6)}}, Verdict: ruleset.MasqueradeFullyRandom{}}
}

// hairpinElems returns the pairs of the destinations of vs that are
// endpoints on this node (only those can reach themselves through it).
func hairpinElems(vs *VirtualService, eps model.Endpoints, nodeName string) []natElem {
	local := map[netip.Addr]bool{}
	for _, e := range eps {
		if e.Node == nodeName {
			local[e.Addr] = true
		}
	}
	var out []natElem
	for _, d := range vs.Dests {
		if local[d.Addr] {
			out = append(out, natElem{hairpinSet(d.Addr.Is6()), ruleset.Element{Addr: d.Addr, Peer: d.Addr}})
		}
	}
	return out
}
