package ipvs

import (
	"net/netip"
	"slices"

	"github.com/cloudflare/ipvs"

	"github.com/nfrouter/nfrouter/model"
)

// PlanConfig is what the planner needs to know about this node.
type PlanConfig struct {
	// NodeName is this node's name: endpoints on it are local.
	NodeName string
	// NodePortBindOnAllIPs (--nodeport-bindon-all-ip) makes NodePorts listen on
	// every address of the Node object instead of its node IP per family.
	NodePortBindOnAllIPs bool
	// NodePortCIDRs (--nodeport-addresses) serve NodePorts only on the
	// addresses of the Node object within them; nil: as above.
	NodePortCIDRs []netip.Prefix
}

// planServicePort returns the virtual services of one service port, sorted by
// key. It is a pure function of its arguments; sc is the scheduler
// configuration already validated (or kept from before).
//
// Virtual services whose traffic policy is Local and that have no local
// endpoint are left out, as kube-router does: their address then answers no
// connection instead of sending it elsewhere.
func planServicePort(sp *model.ServicePort, eps model.Endpoints, node *model.Node, cfg PlanConfig, sc schedConfig) []VirtualService {
	if sp == nil {
		return nil
	}
	var out []VirtualService
	add := func(kind Kind, addrs []netip.Addr, port uint16) {
		if port == 0 {
			return
		}
		local := sp.Options.Local || (kind.External() && sp.ExternalTrafficLocal) || (!kind.External() && sp.InternalTrafficLocal)
		for _, a := range addrs {
			dests := destinations(eps, a.Is4(), local, node, cfg.NodeName, sp.TrafficDistribution)
			if local && len(dests) == 0 {
				continue
			}
			vs := VirtualService{
				VSKey:     VSKey{Addr: a, Proto: sp.Key.Protocol, Port: port},
				Kind:      kind,
				Owner:     sp.Key,
				Scheduler: sc.Scheduler,
				Flags:     sc.Flags,
				Local:     local,
				Dests:     dests,
			}
			if sp.AffinityTimeout > 0 {
				vs.Flags |= ipvs.ServicePersistent
				vs.Timeout = uint32(sp.AffinityTimeout)
			}
			out = append(out, vs)
		}
	}
	add(KindClusterIP, sp.ClusterIPs, sp.Port)
	add(KindExternalIP, sp.ExternalIPs, sp.Port)
	add(KindLoadBalancer, sp.LoadBalancerIPs, sp.Port)
	// A NodePort serves the families of the service, not every family the
	// node has.
	var nodeAddrs []netip.Addr
	for _, a := range node.NodePortAddrs(cfg.NodePortBindOnAllIPs, cfg.NodePortCIDRs) {
		if hasFamily(sp.ClusterIPs, a.Is4()) {
			nodeAddrs = append(nodeAddrs, a)
		}
	}
	add(KindNodePort, nodeAddrs, sp.NodePort)
	slices.SortStableFunc(out, func(a, b VirtualService) int { return a.VSKey.Compare(b.VSKey) })
	// One address may be listed twice (a cluster IP also given as external
	// IP): the first kind wins, by the order above after a stable sort.
	return slices.CompactFunc(out, func(a, b VirtualService) bool { return a.VSKey == b.VSKey })
}
