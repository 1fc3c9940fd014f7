package svcproxy

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/nfrouter/nfrouter/model"
)

// What a change leaves behind outside the table, for the caller to clear
// once the kernel holds the change: conntrack entries of UDP and SCTP flows
// pinned to an endpoint that went (or to the rejection of an address that
// has endpoints now), and session-affinity entries of clients that chose an
// endpoint that went. Neither is the planner's to touch (it never reaches
// the kernel), and neither can be cleared in the transaction: the planner
// does not know the flows or the clients.

// Stale is what changes since the last TakeStale may have left behind.
type Stale struct {
	// Flows: some UDP or SCTP address lost an endpoint, or gained its first.
	Flows bool
	// Gone are the UDP and SCTP addresses no longer programmed.
	Gone []FlowAddr
	// AffinityMaps are the affinity maps of addresses that lost an endpoint.
	AffinityMaps []string
}

// FlowAddr is a service address as a client sends to it.
type FlowAddr struct {
	Proto uint8
	Addr  netip.AddrPort
}

// TakeStale returns what the changes planned since the last call may have
// left behind, and forgets it: the caller keeps it until it is cleared.
func (p *Planner) TakeStale() Stale {
	s := Stale{Flows: p.staleFlows, Gone: p.goneFlows}
	if len(p.staleAffinity) > 0 {
		s.AffinityMaps = slices.Sorted(maps.Keys(p.staleAffinity))
		clear(p.staleAffinity)
	}
	p.staleFlows, p.goneFlows = false, nil
	return s
}

// FlowTargets calls yield for each programmed UDP and SCTP address with the
// endpoints it sends new flows to (in-cluster clients' too).
func (p *Planner) FlowTargets(yield func(FlowAddr, []netip.AddrPort)) {
	for vk, pv := range p.programmed {
		if !conntracked(vk.Proto) {
			continue
		}
		eps := make([]netip.AddrPort, 0, len(pv.plan.Endpoints)+len(pv.plan.Internal))
		for _, e := range pv.plan.Endpoints {
			eps = append(eps, e.AddrPort())
		}
		for _, e := range pv.plan.Internal {
			eps = append(eps, e.AddrPort())
		}
		yield(FlowAddr{uint8(vk.Proto), netip.AddrPortFrom(vk.Addr, vk.Port)}, eps)
	}
}

// AffinityEndpoints returns, for each affinity map in the table, the
// addresses of the endpoints a client it remembers may still be sent to.
func (p *Planner) AffinityEndpoints() map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for vk, pv := range p.programmed {
		if !pv.plan.sticky() {
			continue
		}
		name := AffinityMap(pv.owner, vk.Addr.Is6(), pv.plan.Affinity)
		for _, e := range pv.plan.Endpoints {
			if !slices.Contains(out[name], e.Addr()) {
				out[name] = append(out[name], e.Addr())
			}
		}
	}
	return out
}

// conntracked: flows of the protocol live on while the client sends, so a
// dead endpoint's entries must be deleted (TCP ends its own).
func conntracked(proto model.Protocol) bool { return proto == model.UDP || proto == model.SCTP }

// noteFlows records what an address going from old to new (nil: not
// programmed) leaves in conntrack.
func (p *Planner) noteFlows(vk vipKey, old, new *vipPlan) {
	if !conntracked(vk.Proto) {
		return
	}
	if new == nil {
		if old != nil {
			p.goneFlows = append(p.goneFlows, FlowAddr{uint8(vk.Proto), netip.AddrPortFrom(vk.Addr, vk.Port)})
		}
		return
	}
	oldEps, newEps := targets(old), targets(new)
	if len(oldEps) == 0 && len(newEps) > 0 {
		p.staleFlows = true
		return
	}
	for _, e := range oldEps {
		if !slices.Contains(newEps, e) {
			p.staleFlows = true
			return
		}
	}
}

func targets(pl *vipPlan) []netip.AddrPort {
	if pl == nil {
		return nil
	}
	var out []netip.AddrPort
	for _, e := range slices.Concat(pl.Endpoints, pl.Internal) {
		out = append(out, e.AddrPort())
	}
	return out
}
