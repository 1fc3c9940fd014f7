package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/nfrouter/nfrouter/model"
)

// Router is the BGP routing backend (watch.Backend). Sync plans peers and
// advertisements from the model; a goroutine of its own applies best-path
// events to the kernel and periodically reads the kernel back.
type Router struct {
	cfg     Config
	log     *slog.Logger
	kernel  *Kernel
	metrics *metrics

	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{} // asks the loop for a read-back of the kernel
	ready  chan struct{} // closed when the speaker exists

	// mu protects the fields below; Sync and the loop both use them.
	mu       sync.Mutex
	speaker  *Speaker
	plan     PeerPlan
	adv      *Advertiser
	cluster  *clusterPrefixes
	env      RouteEnv
	best     map[netip.Prefix]BestPath
	routes   map[netip.Prefix]Route // what we installed
	peerUp   map[netip.Addr]string  // session state per peer
	eorFrom  map[netip.Addr]bool
	reported map[Problem]bool
	// offSubnet6 holds the IPv6 prefixes not routed because their node is
	// on another subnet, each logged once.
	offSubnet6 map[netip.Prefix]bool
	// restarting is set when we found our routes in the kernel at start: they
	// are kept until every peer sent End-of-RIB or the deferral time passed.
	restarting bool
}

// New makes the router in the caller's network namespace. The gobgp server
// starts with the first Sync that knows this node.
func New(cfg Config) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("router config: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RouteCheckPeriod <= 0 {
		cfg.RouteCheckPeriod = DefaultRouteCheckPeriod
	}
	k, err := NewKernel()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Router{
		cfg: cfg, log: cfg.Logger.With("backend", "router"), kernel: k, metrics: newMetrics(cfg.Registerer),
		cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1), ready: make(chan struct{}),
		adv: NewAdvertiser(cfg.NodeName, AdvertiseFlags{PodCIDR: cfg.AdvertisePodCIDR, ClusterIP: cfg.AdvertiseClusterIP,
			ExternalIP: cfg.AdvertiseExternalIP, LoadBalancerIP: cfg.AdvertiseLoadBalancerIP}),
		cluster: newClusterPrefixes(),
		env:     RouteEnv{Overlay: cfg.EnableOverlay, OverlayType: cfg.OverlayType, Ignore: map[netip.Prefix]bool{}},
		best:    map[netip.Prefix]BestPath{}, routes: map[netip.Prefix]Route{}, peerUp: map[netip.Addr]string{}, offSubnet6: map[netip.Prefix]bool{},
		eorFrom: map[netip.Addr]bool{}, reported: map[Problem]bool{},
	}
	go r.run(ctx)
	return r, nil
}

// Name implements watch.Backend.
func (r *Router) Name() string { return "router" }

// Kinds implements watch.Backend: nodes for peers and pod CIDRs, services and
// endpoints for VIP advertisements.
func (r *Router) Kinds() model.Kinds {
	return model.KindNodes | model.KindServicePorts | model.KindEndpoints
}

// Sync implements watch.Backend.
func (r *Router) Sync(ctx context.Context, state *model.State, changes *model.Changes) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	nodesChanged := changes.Full || len(changes.Nodes) > 0
	if nodesChanged || r.speaker == nil {
		plan, err := PlanPeers(&r.cfg, state.Nodes)
		if err != nil {
			return err
		}
		r.report(plan.Problems)
		if r.speaker == nil {
			if err := r.startSpeaker(plan); err != nil {
				return err
			}
		} else if plan.LocalASN != r.plan.LocalASN || plan.RouterID != r.plan.RouterID || plan.Local != r.plan.Local {
			r.log.Warn("This node's ASN, router ID or addresses changed; restart nfrouter to apply",
				"asn", plan.LocalASN, "routerID", plan.RouterID, "ipv4", plan.Local.V4, "ipv6", plan.Local.V6)
			plan.LocalASN, plan.RouterID, plan.Local = r.plan.LocalASN, r.plan.RouterID, r.plan.Local
		}
		r.plan = plan
		if _, err := r.speaker.SetPeers(ctx, plan); err != nil {
			errs = append(errs, err)
		}
		r.env.Local, r.env.NodeAddrs = plan.Local, plan.NodeAddrs
		r.dropPathsOfGonePeers()
	}
	delta, problems := r.adv.Update(state, changes)
	r.report(problems)
	r.report(r.noNextHop(delta.Add))
	if err := r.speaker.Advertise(ctx, delta); err != nil {
		errs = append(errs, err)
	}
	added, removed, vipsChanged := r.cluster.update(state, changes)
	if err := r.speaker.SetClusterPrefixes(ctx, added, removed); err != nil {
		errs = append(errs, err)
	}
	r.metrics.pathsAdvertised.Set(float64(len(r.adv.count)))

	// What we must not route (VIPs and what we originate) changes only for
	// the prefixes of this update's deltas: re-plan their best paths, or
	// every best path when the nodes changed (in memory; the kernel sees only
	// differences).
	ignoreChanged := r.updateIgnore(delta.Add, delta.Withdraw, vipsChanged)
	if nodesChanged {
		for p := range r.best {
			r.applyPrefix(p)
		}
	} else {
		for _, p := range ignoreChanged {
			if _, ok := r.best[p]; ok {
				r.applyPrefix(p)
			}
		}
	}
	if changes.Full {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	return errors.Join(errs...)
}

// updateIgnore brings r.env.Ignore up to date for the given prefixes, the
// only ones whose VIP or origination count may have gone to or from zero, and
// returns those whose entry changed. r.mu is held.
func (r *Router) updateIgnore(candidates ...[]netip.Prefix) []netip.Prefix {
	var changed []netip.Prefix
	for _, list := range candidates {
		for _, p := range list {
			ignore := r.cluster.vips[p] > 0 || r.adv.count[p] > 0
			if ignore == r.env.Ignore[p] {
				continue
			}
			if ignore {
				r.env.Ignore[p] = true
			} else {
				delete(r.env.Ignore, p)
			}
			changed = append(changed, p)
		}
	}
	return changed
}

func (r *Router) startSpeaker(plan PeerPlan) error {
	subnets, err := r.kernel.Subnets()
	if err != nil {
		return err
	}
	r.env.Subnets = subnets
	existing, err := r.kernel.Routes()
	if err != nil {
		return err
	}
	r.routes = existing
	r.restarting = r.cfg.GracefulRestart && len(existing) > 0
	sp, err := StartSpeaker(&r.cfg, plan, r.restarting, r.log)
	if err != nil {
		return err
	}
	r.speaker = sp
	r.log.Info("BGP server started", "asn", plan.LocalASN, "routerID", plan.RouterID, "port", r.cfg.Port,
		"gracefulRestart", r.cfg.GracefulRestart, "restarting", r.restarting, "keptRoutes", len(existing))
	close(r.ready)
	return nil
}

// noNextHop returns a problem for each prefix to advertise of a family this
// node has no address of: the speaker leaves it out. r.mu is held.
func (r *Router) noNextHop(add []netip.Prefix) []Problem {
	var out []Problem
	for _, p := range add {
		if !r.plan.Local.For(p.Addr()).IsValid() {
			out = append(out, Problem{Node: r.cfg.NodeName, Reason: "NoNextHop",
				Message: fmt.Sprintf("%s not advertised: the node has no internal address of its family", p)})
		}
	}
	return out
}

// report logs and records each problem once while it lasts.
func (r *Router) report(problems []Problem) {
	for _, p := range problems {
		if r.reported[p] {
			continue
		}
		r.reported[p] = true
		r.metrics.invalidSettings.Inc()
		r.log.Warn("Ignoring invalid setting", "node", p.Node, "reason", p.Reason, "message", p.Message)
		if r.cfg.Events != nil {
			r.cfg.Events.NodeEvent(p.Node, "Warning", p.Reason, p.Message)
		}
	}
}

// ClusterCIDRs returns every node's pod CIDRs, for the pod egress masquerade
// rule (traffic from them to anything outside them is masqueraded).
func (r *Router) ClusterCIDRs() []netip.Prefix {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cluster.podCIDRs()
}

// Close stops the loop; installed routes stay for the next start. With
// graceful restart the sessions are left to end with the process, so that
// peers see a restart and keep our paths: gobgp's StopBgp sends a Cease with
// Hard Reset (RFC 8538), after which peers must drop them. Without graceful
// restart the server is stopped and peers withdraw our paths at once.
func (r *Router) Close() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.speaker != nil && !r.cfg.GracefulRestart {
		r.speaker.Stop()
	}
	r.kernel.Close()
	return nil
}
