package ipvs

import (
	"context"
	"net/netip"
	"time"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/conntrack"
)

// UDP and SCTP flows live in conntrack (net.ipv4.vs.conntrack=1) as long
// as their client sends: a destination that went keeps receiving them, and
// a service that got its first destination keeps rejecting them, until
// their entries are deleted. After each sync that removed such a
// destination or service, or gave one its first destination, and after
// every full sync (a restart, a failure), the proxy deletes the entries of
// UDP and SCTP flows to its virtual services that no current destination
// answers (package nft/conntrack). A failed pass is counted and tried again
// after the next sync; it never fails the sync.

// conntracked: flows of the protocol live on while the client sends.
func conntracked(proto model.Protocol) bool { return proto == model.UDP || proto == model.SCTP }

// hasLive reports whether a virtual service has a destination of weight
// above 0.
func hasLive(pv *progVS) bool {
	for _, d := range pv.dests {
		if d.weight > 0 {
			return true
		}
	}
	return false
}

// pendingFlows are the conntrack deletions still to do.
type pendingFlows struct {
	flows bool
	gone  map[conntrack.ServiceAddr]struct{}
}

// takeStale moves what the applier noted into pending.
func (a *applier) takeStale(p *pendingFlows) {
	p.flows = p.flows || a.staleFlows
	for _, k := range a.goneFlows {
		p.gone[conntrack.ServiceAddr{Proto: uint8(k.Proto), Addr: netip.AddrPortFrom(k.Addr, k.Port)}] = struct{}{}
	}
	a.staleFlows, a.goneFlows = false, nil
}

// flowTargets lists every UDP and SCTP virtual service with the
// destinations it sends new flows to.
func (a *applier) flowTargets(into conntrack.ServiceFlows) {
	for k, pv := range a.prog {
		if !conntracked(k.Proto) {
			continue
		}
		var eps []netip.AddrPort
		for d, pd := range pv.dests {
			if pd.weight > 0 {
				eps = append(eps, netip.AddrPortFrom(d.Addr, d.Port))
			}
		}
		into[conntrack.ServiceAddr{Proto: uint8(k.Proto), Addr: netip.AddrPortFrom(k.Addr, k.Port)}] = eps
	}
}

// deleteStaleFlows runs the pending conntrack pass, if any; called with mu
// held after a successful sync.
func (p *Proxy) deleteStaleFlows(ctx context.Context, full bool) {
	p.applier.takeStale(&p.pending)
	if full {
		p.pending.flows = true
	}
	if !p.pending.flows && len(p.pending.gone) == 0 {
		return
	}
	flows := conntrack.ServiceFlows{}
	for a := range p.pending.gone {
		flows[a] = nil
	}
	p.applier.flowTargets(flows)
	if len(flows) == 0 {
		p.pending.flows = false
		return
	}
	if p.ct == nil && p.ctErr == nil {
		return // fakes: no kernel
	}
	start := time.Now()
	n, err := 0, p.ctErr
	if err == nil {
		n, err = conntrack.DeleteStaleServiceFlows(p.ct, flows)
	}
	p.metrics.flowsDeleted.Add(float64(n))
	if err != nil {
		p.metrics.flowErrors.Inc()
		p.log.WarnContext(ctx, "cannot delete conntrack entries of UDP/SCTP flows whose destination went; trying again after the next sync", "error", err)
		return
	}
	p.pending.flows = false
	clear(p.pending.gone)
	if n > 0 {
		p.log.InfoContext(ctx, "Deleted conntrack entries of UDP/SCTP flows whose destination went", "deleted", n,
			"services", len(flows), "duration", time.Since(start))
	}
}
