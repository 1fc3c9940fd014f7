package nft

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/google/nftables"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/nft/conntrack"
	"github.com/nfrouter/nfrouter/nft/internal/nftconn"
	"github.com/nfrouter/nfrouter/nft/svcproxy"
)

// What a service change leaves outside the table (see svcproxy/stale.go)
// is cleared here once the kernel holds the change: conntrack entries of
// UDP and SCTP flows, and affinity entries that name an endpoint that went.
// Both passes are built from the whole desired state, so a pass that failed
// (counted, logged, and tried again after the next sync) or a restart of
// nfrouter (the first sync is full, and a full sync runs both passes over
// everything) leaves nothing stale for good. Neither ever fails a sync.

// staleMetrics count what the passes deleted and how often they failed.
type staleMetrics struct {
	flowsDeleted, flowErrors       prometheus.Counter
	affinityDeleted, affinityError prometheus.Counter
}

func newStaleMetrics(reg prometheus.Registerer) (*staleMetrics, error) {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nfrouter", Subsystem: "service_proxy", Name: name, Help: help})
	}
	m := &staleMetrics{
		flowsDeleted: c("conntrack_entries_deleted_total", "Conntrack entries of UDP and SCTP flows deleted because their endpoint went or their service address got endpoints."),
		flowErrors:   c("conntrack_errors_total", "Failed passes over the conntrack table to delete stale UDP and SCTP service flows (tried again after the next sync)."),
		affinityDeleted: c("affinity_entries_deleted_total",
			"Session-affinity entries deleted because the endpoint they remember went."),
		affinityError: c("affinity_errors_total", "Failed passes over affinity maps to delete entries of endpoints that went (tried again after the next sync)."),
	}
	if reg != nil {
		for _, x := range []prometheus.Collector{m.flowsDeleted, m.flowErrors, m.affinityDeleted, m.affinityError} {
			if err := reg.Register(x); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// pendingStale is what is still to be cleared.
type pendingStale struct {
	flows       bool
	gone        map[conntrack.ServiceAddr]struct{}
	affinity    map[string]struct{}
	allAffinity bool
}

func (p *pendingStale) add(s svcproxy.Stale) {
	p.flows = p.flows || s.Flows
	for _, g := range s.Gone {
		p.gone[conntrack.ServiceAddr{Proto: g.Proto, Addr: g.Addr}] = struct{}{}
	}
	for _, m := range s.AffinityMaps {
		p.affinity[m] = struct{}{}
	}
}

// Applied implements Applied: it deletes what the programmed change left
// stale, everything on a full sync.
func (s *ServiceProxy) Applied(ctx context.Context, full bool) error {
	if full {
		s.pending.flows, s.pending.allAffinity = true, true
	}
	if s.pending.flows || len(s.pending.gone) > 0 {
		if err := s.deleteStaleFlows(ctx); err != nil {
			s.stale.flowErrors.Inc()
			s.log.WarnContext(ctx, "cannot delete conntrack entries of UDP/SCTP flows whose endpoint went; trying again after the next sync", "error", err)
		} else {
			s.pending.flows = false
			clear(s.pending.gone)
		}
	}
	if s.pending.allAffinity || len(s.pending.affinity) > 0 {
		if err := s.deleteStaleAffinity(ctx); err != nil {
			s.stale.affinityError.Inc()
			s.log.WarnContext(ctx, "cannot delete affinity entries of endpoints that went; trying again after the next sync", "error", err)
		} else {
			s.pending.allAffinity = false
			clear(s.pending.affinity)
		}
	}
	return nil
}

func (s *ServiceProxy) deleteStaleFlows(ctx context.Context) error {
	flows := conntrack.ServiceFlows{}
	for a := range s.pending.gone {
		flows[a] = nil
	}
	s.planner.FlowTargets(func(a svcproxy.FlowAddr, eps []netip.AddrPort) {
		flows[conntrack.ServiceAddr{Proto: a.Proto, Addr: a.Addr}] = eps
	})
	if len(flows) == 0 {
		return nil
	}
	h, err := conntrack.Handle(s.cfg.NetNSFd)
	if err != nil {
		return err
	}
	defer h.Close()
	start := time.Now()
	n, err := conntrack.DeleteStaleServiceFlows(h, flows)
	s.stale.flowsDeleted.Add(float64(n))
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.InfoContext(ctx, "deleted conntrack entries of UDP/SCTP flows whose endpoint went", "deleted", n,
			"addresses", len(flows), "duration", time.Since(start))
	}
	return nil
}

// deleteStaleAffinity deletes the entries of the pending affinity maps (all
// of them after a full sync) that remember an endpoint the map's addresses
// no longer have.
func (s *ServiceProxy) deleteStaleAffinity(ctx context.Context) error {
	live := s.planner.AffinityEndpoints()
	names := slices.Sorted(maps.Keys(s.pending.affinity))
	if s.pending.allAffinity {
		names = slices.Sorted(maps.Keys(live))
	}
	if len(names) == 0 {
		return nil
	}
	// A map holds up to 65,535 clients: buffers for reading and deleting
	// that many in one batch.
	c, err := nftconn.Open(s.cfg.NetNSFd, nftconn.Buffers(8<<20, 8<<20))
	if err != nil {
		return fmt.Errorf("affinity: netlink: %w", err)
	}
	defer c.CloseLasting()
	tbl := &nftables.Table{Family: nftables.TableFamilyINet, Name: TableName}
	deleted := 0
	for _, name := range names {
		eps, ok := live[name]
		if !ok {
			continue // the map went with its last address
		}
		// An entry that times out between reading and deleting fails the
		// batch (ENOENT): read again once before giving up until the next
		// sync.
		var err error
		for range 2 {
			var n int
			if n, err = deleteStaleEntries(c, tbl, name, eps); err == nil {
				deleted += n
				break
			}
		}
		if err != nil {
			s.stale.affinityDeleted.Add(float64(deleted))
			return err
		}
	}
	s.stale.affinityDeleted.Add(float64(deleted))
	if deleted > 0 {
		s.log.InfoContext(ctx, "deleted affinity entries of endpoints that went", "deleted", deleted, "maps", len(names))
	}
	return nil
}

// deleteStaleEntries deletes the entries of affinity map name that remember
// an endpoint other than eps.
func deleteStaleEntries(c *nftables.Conn, tbl *nftables.Table, name string, eps []netip.Addr) (int, error) {
	set, err := c.GetSetByName(tbl, name)
	if err != nil {
		return 0, fmt.Errorf("affinity: read map %s: %w", name, err)
	}
	elems, err := c.GetSetElements(set)
	if err != nil {
		return 0, fmt.Errorf("affinity: read map %s: %w", name, err)
	}
	var stale []nftables.SetElement
	for _, e := range elems {
		if ep, ok := netip.AddrFromSlice(e.Val); !ok || !slices.Contains(eps, ep) {
			stale = append(stale, nftables.SetElement{Key: e.Key})
		}
	}
	if len(stale) == 0 {
		return 0, nil
	}
	for chunk := range slices.Chunk(stale, 2000) {
		if err := c.SetDeleteElements(set, chunk); err != nil {
			return 0, fmt.Errorf("affinity: delete from map %s: %w", name, err)
		}
	}
	if err := c.Flush(); err != nil {
		return 0, fmt.Errorf("affinity: delete from map %s: %w", name, err)
	}
	return len(stale), nil
}
