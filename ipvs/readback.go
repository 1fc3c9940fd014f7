package ipvs

import (
	"fmt"
	"net/netip"
	"time"
)

// repair reads IPVS and the dummy interface back and makes them match the
// planner: a full sync. It recreates what someone deleted, resets what
// someone changed, and removes our services that are no longer wanted
// (see the package comment for which ones are ours); destinations that are
// no longer wanted drain as usual.
func (a *applier) repair(p *Planner) error {
	a.count("ensure_interface")
	if err := a.addrs.Ensure(); err != nil {
		return fmt.Errorf("dummy interface: %w", err)
	}
	a.count("list_addresses")
	onLink, err := a.addrs.List()
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	ours := map[netip.Addr]bool{}
	for _, addr := range onLink {
		ours[addr] = true
	}
	nodePortAddrs := map[netip.Addr]bool{}
	for k, pv := range a.prog {
		if pv.kind == KindNodePort {
			nodePortAddrs[k.Addr] = true
		}
	}
	wanted := p.Services()
	for _, vs := range wanted {
		if vs.Kind == KindNodePort {
			nodePortAddrs[vs.Addr] = true
		}
	}

	a.count("list_services")
	kernel, err := a.ipvs.Services()
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	old := a.prog
	a.prog, a.draining, a.dests = map[VSKey]*progVS{}, map[VSKey]struct{}{}, 0
	read := map[VSKey]map[Dest]uint32{} // connections per destination, for the reap below
	for _, ks := range kernel {
		if ks.FWMark != 0 {
			continue
		}
		k := keyOf(ks.Service)
		want := p.Service(k)
		if want == nil {
			_, programmed := old[k]
			nodePort := nodePortAddrs[k.Addr] && k.Port >= a.nodePortMin && k.Port <= a.nodePortMax
			if programmed || ours[k.Addr] || nodePort {
				if err := a.removeService(k, ks.Service); err != nil {
					return err
				}
			}
			continue
		}
		pv := &progVS{svc: ks.Service, kind: want.Kind, dests: map[Dest]*progDest{}}
		a.count("list_destinations")
		kds, err := a.ipvs.Destinations(ks.Service)
		if err != nil {
			return fmt.Errorf("read destinations of %s: %w", k, err)
		}
		read[k] = connsOf(kds)
		for _, kd := range kds {
			d := Dest{Addr: kd.Address.Unmap(), Port: kd.Port}
			pd := &progDest{weight: kd.Weight}
			if kd.Weight == 0 {
				pd.drainUntil = a.drainDeadline(old, k, d)
			}
			pv.dests[d] = pd
			a.dests++
		}
		a.prog[k] = pv
		if !sameParams(ks.Service, kernelService(want)) {
			// Update with the identity read back, so that a service we
			// only take over keeps its key.
			svc := kernelService(want)
			a.count("update_service")
			if err := a.ipvs.UpdateService(svc); err != nil {
				return fmt.Errorf("update service %s: %w", k, err)
			}
			pv.svc = svc
		}
		if err := a.syncDests(k, pv, want.Dests); err != nil {
			return err
		}
	}
	for _, want := range wanted {
		if _, ok := a.prog[want.VSKey]; ok {
			continue
		}
		if err := a.syncService(want.VSKey, want); err != nil {
			return err
		}
	}

	vips := map[netip.Addr]bool{}
	for _, addr := range p.VIPs() {
		vips[addr] = true
		if !ours[addr] {
			if err := a.addVIP(addr); err != nil {
				return err
			}
		}
	}
	for _, addr := range onLink {
		if !vips[addr] {
			if err := a.deleteVIP(addr); err != nil {
				return err
			}
		}
	}
	return a.reapAll(read)
}

// drainDeadline keeps the deadline of a destination that was already
// draining; one found draining after a restart gets a full grace period.
func (a *applier) drainDeadline(old map[VSKey]*progVS, k VSKey, d Dest) time.Time {
	if pv := old[k]; pv != nil {
		if pd := pv.dests[d]; pd != nil && pd.weight == 0 && !pd.drainUntil.IsZero() {
			return pd.drainUntil
		}
	}
	return a.clock.Now().Add(a.grace)
}
