package ipvs

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cloudflare/ipvs"
)

// reap deletes the draining destinations of the given virtual services whose
// connections have ended (IPVS counts no active or inactive connection) or
// whose grace period is over. It reads the destinations of each such service
// once, unless read holds them already (a full sync just listed them);
// services without draining destinations cost nothing.
func (a *applier) reap(keys []VSKey, read map[VSKey]map[Dest]uint32) error {
	now := a.clock.Now()
	for _, k := range keys {
		if _, ok := a.draining[k]; !ok {
			continue
		}
		pv := a.prog[k]
		if pv == nil {
			delete(a.draining, k)
			continue
		}
		conns, ok := read[k]
		if !ok {
			a.count("list_destinations")
			kernel, err := a.ipvs.Destinations(pv.svc)
			if err != nil {
				return fmt.Errorf("read destinations of %s: %w", k, err)
			}
			conns = connsOf(kernel)
		}
		left := 0
		for _, d := range slices.SortedFunc(maps.Keys(pv.dests), Dest.Compare) {
			pd := pv.dests[d]
			if pd.weight != 0 {
				continue
			}
			n, present := conns[d]
			if present && n > 0 && now.Before(pd.drainUntil) {
				left++
				continue
			}
			if !present {
				// Gone already (by hand); forget it.
				delete(pv.dests, d)
				a.dests--
				continue
			}
			if err := a.removeDest(k, pv, d); err != nil {
				return err
			}
		}
		if left == 0 {
			delete(a.draining, k)
		}
	}
	return nil
}

// reapAll reaps every virtual service with draining destinations; read is
// as for reap.
func (a *applier) reapAll(read map[VSKey]map[Dest]uint32) error {
	return a.reap(slices.SortedFunc(maps.Keys(a.draining), VSKey.Compare), read)
}

// connsOf counts the connections (active and inactive) of each destination.
func connsOf(kernel []ipvs.DestinationExtended) map[Dest]uint32 {
	conns := make(map[Dest]uint32, len(kernel))
	for _, kd := range kernel {
		conns[Dest{Addr: kd.Address.Unmap(), Port: kd.Port}] = kd.ActiveConnections + kd.InactiveConnections
	}
	return conns
}
