package bgp

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

// run applies the speaker's events and reads the kernel back periodically
// and when Sync asks for it.
func (r *Router) run(ctx context.Context) {
	defer close(r.done)
	select {
	case <-ctx.Done():
		return
	case <-r.ready:
	}
	check := time.NewTicker(r.cfg.RouteCheckPeriod)
	defer check.Stop()
	var deferral <-chan time.Time
	if r.restarting {
		t := time.NewTimer(r.cfg.GracefulRestartDeferral)
		defer t.Stop()
		deferral = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.speaker.Events():
			r.mu.Lock()
			for _, ev := range r.speaker.Drain() {
				r.handle(ev)
			}
			r.mu.Unlock()
		case <-deferral:
			r.mu.Lock()
			if r.restarting {
				r.log.Info("Graceful restart deferral time passed; removing routes no peer sent again")
				r.restarting = false
				r.reconcile()
			}
			r.mu.Unlock()
		case <-check.C:
			r.mu.Lock()
			r.reconcile()
			r.mu.Unlock()
		case <-r.kick:
			r.mu.Lock()
			r.reconcile()
			r.mu.Unlock()
		}
	}
}

// handle applies one event; r.mu is held.
func (r *Router) handle(ev speakerEvent) {
	switch {
	case ev.peer.IsValid():
		r.peerUp[ev.peer] = ev.state
		if ev.state != "ESTABLISHED" {
			delete(r.eorFrom, ev.peer)
		}
		counts := map[string]int{}
		for addr, st := range r.peerUp {
			if _, ok := r.speaker.peers[addr]; ok {
				counts[st]++
			} else {
				delete(r.peerUp, addr)
			}
		}
		r.metrics.peers.Reset()
		for st, n := range counts {
			r.metrics.peers.WithLabelValues(st).Set(float64(n))
		}
		r.log.Debug("BGP session state", "peer", ev.peer, "state", ev.state)
	case ev.eorFrom.IsValid():
		r.eorFrom[ev.eorFrom] = true
		if r.restarting && r.allEOR() {
			r.log.Info("Every peer sent End-of-RIB; graceful restart done")
			r.restarting = false
			r.reconcile()
		}
	}
	for _, p := range ev.paths {
		if p.Withdraw {
			delete(r.best, p.Prefix)
		} else {
			r.best[p.Prefix] = p
		}
		r.applyPrefix(p.Prefix)
	}
	r.metrics.pathsReceived.Set(float64(len(r.best)))
}

// dropPathsOfGonePeers forgets the best paths of peers that SetPeers just
// deleted and removes their routes now. gobgp withdraws those paths too, but
// a moment later: re-planning them in between, with their node already gone
// from RouteEnv.NodeAddrs, would turn a departed node's tunnel route into a
// direct one (a second route operation, which the kernel refuses when the
// node is on another subnet). The later withdrawal then finds nothing to do.
// r.mu is held.
func (r *Router) dropPathsOfGonePeers() {
	for p, bp := range r.best {
		if _, ok := r.speaker.peers[bp.Peer]; ok || !bp.Peer.IsValid() {
			continue
		}
		delete(r.best, p)
		r.applyPrefix(p)
	}
	r.metrics.pathsReceived.Set(float64(len(r.best)))
}

func (r *Router) allEOR() bool {
	for addr := range r.speaker.peers {
		if !r.eorFrom[addr] {
			return false
		}
	}
	return true
}

// applyPrefix makes the kernel route for one prefix match its best path:
// at most one route operation. r.mu is held.
func (r *Router) applyPrefix(p netip.Prefix) {
	want, ok := PlanRoute(&r.env, r.best[p])
	if r.env.OffSubnetIPv6(r.best[p]) {
		if !r.offSubnet6[p] {
			r.offSubnet6[p] = true
			r.log.Warn("Not routing IPv6 prefix: its node is on another subnet and the overlay (ipip) is IPv4 only",
				"prefix", p, "nextHop", r.best[p].NextHop)
		}
	} else {
		delete(r.offSubnet6, p)
	}
	have, installed := r.routes[p]
	switch {
	case ok && installed && have == want:
		return
	case ok:
		if err := r.kernel.Install(want, r.env.Local.V4); err != nil {
			r.metrics.routeErrors.Inc()
			if errors.Is(err, errForeignRoute) {
				r.log.Warn("Not installing route: the prefix is routed by someone else", "route", want.String())
			} else {
				r.log.Error("Installing route", "route", want.String(), "error", err)
			}
			return
		}
		r.routes[p] = want
		r.log.Debug("Route installed", "route", want.String())
	case installed:
		if r.restarting {
			return // kept until the peers have sent everything again
		}
		if err := r.kernel.Remove(p); err != nil {
			r.metrics.routeErrors.Inc()
			r.log.Error("Removing route", "prefix", p, "error", err)
			return
		}
		delete(r.routes, p)
		r.log.Debug("Route removed", "prefix", p)
	}
	r.metrics.routesInstalled.Set(float64(len(r.routes)))
}

// reconcile reads our routes and tunnels back from the kernel and repairs
// the difference: routes removed by hand come back, stale ones go. r.mu is
// held.
func (r *Router) reconcile() {
	start := time.Now()
	defer func() { r.metrics.routeSync.Observe(time.Since(start).Seconds()) }()
	if subnets, err := r.kernel.Subnets(); err == nil {
		r.env.Subnets = subnets
	}
	have, err := r.kernel.Routes()
	if err != nil {
		r.log.Error("Reading routes back", "error", err)
		return
	}
	r.routes = have
	for p := range r.best {
		r.applyPrefix(p)
	}
	for p := range have {
		if _, ok := r.best[p]; !ok {
			r.applyPrefix(p)
		}
	}
	if r.restarting {
		return
	}
	inUse := map[string]bool{}
	for _, rt := range r.routes {
		inUse[rt.Tunnel] = true
	}
	tunnels, err := r.kernel.Tunnels()
	if err != nil {
		r.log.Error("Reading tunnels back", "error", err)
		return
	}
	for _, t := range tunnels {
		if !inUse[t] {
			if err := r.kernel.RemoveTunnel(t); err != nil {
				r.log.Error("Removing tunnel", "error", err)
			}
		}
	}
	r.metrics.routesInstalled.Set(float64(len(r.routes)))
}
