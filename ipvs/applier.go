package ipvs

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/cloudflare/ipvs"
	"k8s.io/utils/clock"
)

// Stats describe the kernel work of one sync.
type Stats struct {
	// Ops counts netlink requests by operation: create_service,
	// update_service, remove_service, create_destination,
	// update_destination, remove_destination, list_services,
	// list_destinations, add_address, delete_address, list_addresses,
	// ensure_interface.
	Ops map[string]int
	// Services and Destinations are what is programmed after the sync.
	Services, Destinations int
	// Draining are destinations with weight 0 waiting for their connections
	// to end.
	Draining int
}

// Total is the number of netlink requests.
func (s Stats) Total() int {
	n := 0
	for _, v := range s.Ops {
		n += v
	}
	return n
}

// applier makes IPVS and the dummy interface match the planner. It keeps
// what it programmed, so that an incremental apply touches only the virtual
// services the planner reports as changed and lists nothing.
type applier struct {
	ipvs  IPVS
	addrs Addresses
	clock clock.PassiveClock
	// grace is how long a removed destination may drain; 0 deletes it at once.
	grace time.Duration
	// nodePorts is the NodePort range: a service there on a NodePort address
	// is ours even when we did not program it (after a restart).
	nodePortMin, nodePortMax uint16

	prog     map[VSKey]*progVS
	draining map[VSKey]struct{} // services with draining destinations
	dests    int                // destinations in prog
	ops      map[string]int     // of the current sync

	// What changes left in conntrack until takeStale (stale.go).
	staleFlows bool
	goneFlows  []VSKey
}

type progVS struct {
	svc   ipvs.Service
	kind  Kind
	dests map[Dest]*progDest
}

type progDest struct {
	weight     uint32
	drainUntil time.Time // when weight is 0
}

func newApplier(k IPVS, a Addresses, c clock.PassiveClock, grace time.Duration, npMin, npMax uint16) *applier {
	return &applier{ipvs: k, addrs: a, clock: c, grace: grace, nodePortMin: npMin, nodePortMax: npMax,
		prog: map[VSKey]*progVS{}, draining: map[VSKey]struct{}{}}
}

// begin starts counting the operations of one sync; end returns the stats.
func (a *applier) begin() { a.ops = map[string]int{} }

func (a *applier) end() Stats {
	n := 0
	for k := range a.draining {
		for _, d := range a.prog[k].dests {
			if d.weight == 0 {
				n++
			}
		}
	}
	return Stats{Ops: a.ops, Services: len(a.prog), Destinations: a.dests, Draining: n}
}

func (a *applier) count(op string) { a.ops[op]++ }

// apply programs what one incremental planner update changed.
func (a *applier) apply(p *Planner, res *Result) error {
	for _, addr := range res.VIPsAdded {
		if err := a.addVIP(addr); err != nil {
			return err
		}
	}
	for _, k := range res.Changed {
		if err := a.syncService(k, p.Service(k)); err != nil {
			return err
		}
	}
	for _, addr := range res.VIPsRemoved {
		if err := a.deleteVIP(addr); err != nil {
			return err
		}
	}
	return a.reap(res.Changed, nil)
}

func (a *applier) addVIP(addr netip.Addr) error {
	a.count("add_address")
	if err := a.addrs.Add(addr); err != nil && !isExist(err) {
		return fmt.Errorf("add address %s: %w", addr, err)
	}
	return nil
}

func (a *applier) deleteVIP(addr netip.Addr) error {
	a.count("delete_address")
	if err := a.addrs.Delete(addr); err != nil && !isGone(err) {
		return fmt.Errorf("delete address %s: %w", addr, err)
	}
	return nil
}

// syncService makes the virtual service k match want (nil: remove it).
func (a *applier) syncService(k VSKey, want *VirtualService) error {
	pv := a.prog[k]
	if want == nil {
		if pv == nil {
			return nil
		}
		return a.removeService(k, pv.svc)
	}
	svc := kernelService(want)
	if pv == nil {
		a.count("create_service")
		err := a.ipvs.CreateService(svc)
		if isExist(err) {
			// Someone made it; take it over.
			a.count("update_service")
			err = a.ipvs.UpdateService(svc)
		}
		if err != nil {
			return fmt.Errorf("create service %s: %w", k, err)
		}
		pv = &progVS{svc: svc, kind: want.Kind, dests: map[Dest]*progDest{}}
		a.prog[k] = pv
	} else if !sameParams(pv.svc, svc) {
		a.count("update_service")
		if err := a.ipvs.UpdateService(svc); err != nil {
			return fmt.Errorf("update service %s: %w", k, err)
		}
		pv.svc = svc
	}
	pv.kind = want.Kind
	return a.syncDests(k, pv, want.Dests)
}

func (a *applier) removeService(k VSKey, svc ipvs.Service) error {
	a.count("remove_service")
	if err := a.ipvs.RemoveService(svc); err != nil && !isGone(err) {
		return fmt.Errorf("remove service %s: %w", k, err)
	}
	if pv := a.prog[k]; pv != nil {
		a.dests -= len(pv.dests)
	}
	delete(a.prog, k)
	delete(a.draining, k)
	if conntracked(k.Proto) {
		a.goneFlows = append(a.goneFlows, k)
	}
	return nil
}

// syncDests gives every wanted destination weight 1 and lets the others
// drain; UDP and SCTP destinations are deleted at once, as kube-proxy
// does: their flows have no end to wait for, and the conntrack entries
// of their flows are deleted after the sync (stale.go).
func (a *applier) syncDests(k VSKey, pv *progVS, want []Dest) error {
	if conntracked(k.Proto) && len(want) > 0 && !hasLive(pv) {
		a.staleFlows = true // its first endpoint: flows of the rejection go
	}
	wanted := make(map[Dest]struct{}, len(want))
	for _, d := range want {
		wanted[d] = struct{}{}
		pd := pv.dests[d]
		switch {
		case pd == nil:
			if err := a.createDest(k, pv, d); err != nil {
				return err
			}
		case pd.weight != 1:
			if err := a.setWeight(k, pv, d, 1); err != nil {
				return err
			}
			pd.drainUntil = time.Time{}
		}
	}
	for _, d := range slices.SortedFunc(maps.Keys(pv.dests), Dest.Compare) {
		if _, ok := wanted[d]; ok {
			continue
		}
		pd := pv.dests[d]
		if a.grace <= 0 || conntracked(k.Proto) {
			if err := a.removeDest(k, pv, d); err != nil {
				return err
			}
			a.staleFlows = a.staleFlows || conntracked(k.Proto)
			continue
		}
		if pd.weight != 0 {
			if err := a.setWeight(k, pv, d, 0); err != nil {
				return err
			}
			pd.drainUntil = a.clock.Now().Add(a.grace)
		}
		a.draining[k] = struct{}{}
	}
	return nil
}

func (a *applier) createDest(k VSKey, pv *progVS, d Dest) error {
	a.count("create_destination")
	err := a.ipvs.CreateDestination(pv.svc, kernelDest(d, 1))
	if isExist(err) {
		a.count("update_destination")
		err = a.ipvs.UpdateDestination(pv.svc, kernelDest(d, 1))
	}
	if err != nil {
		return fmt.Errorf("create destination %s of %s: %w", d, k, err)
	}
	pv.dests[d] = &progDest{weight: 1}
	a.dests++
	return nil
}

func (a *applier) setWeight(k VSKey, pv *progVS, d Dest, w uint32) error {
	a.count("update_destination")
	if err := a.ipvs.UpdateDestination(pv.svc, kernelDest(d, w)); err != nil {
		return fmt.Errorf("set weight %d of destination %s of %s: %w", w, d, k, err)
	}
	pv.dests[d].weight = w
	return nil
}

func (a *applier) removeDest(k VSKey, pv *progVS, d Dest) error {
	a.count("remove_destination")
	if err := a.ipvs.RemoveDestination(pv.svc, kernelDest(d, 0)); err != nil && !isGone(err) {
		return fmt.Errorf("remove destination %s of %s: %w", d, k, err)
	}
	if _, ok := pv.dests[d]; ok {
		delete(pv.dests, d)
		a.dests--
	}
	return nil
}
