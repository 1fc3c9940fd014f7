package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
)

// connectRetry is how long gobgp waits before dialling a peer again; its
// default of two minutes would make a node that starts before its peers wait
// that long for the session it could open itself.
const connectRetry = 5 * time.Second

// speakerEvent is one event of the server, in arrival order.
type speakerEvent struct {
	paths []BestPath
	// peer and state are set for a session state change.
	peer  netip.Addr
	state string
	// eorFrom is set for an End-of-RIB marker.
	eorFrom netip.Addr
}

// Speaker is the embedded gobgp server. Its methods are called from one
// goroutine (the router's Sync); events arrive on Events.
type Speaker struct {
	s   *server.BgpServer
	cfg *Config
	log *slog.Logger
	// restarting is whether this server announced a graceful restart.
	restarting bool
	peers      map[netip.Addr]PeerSpec
	// nextHops are this node's addresses: the next hop of a path is the one
	// of its prefix's family.
	nextHops FamilyAddrs
	stop     context.CancelFunc

	// mu protects queue; notify has a token when queue is not empty.
	mu     sync.Mutex
	queue  []speakerEvent
	notify chan struct{}
}

// StartSpeaker starts a server with the plan's identity. restarting says
// whether to announce a graceful restart (we kept forwarding state).
func StartSpeaker(cfg *Config, plan PeerPlan, restarting bool, log *slog.Logger) (*Speaker, error) {
	s := server.NewBgpServer(server.LoggerOption(gobgpLogger{log}))
	go s.Serve()
	ctx, cancel := context.WithCancel(context.Background())
	sp := &Speaker{s: s, cfg: cfg, log: log, restarting: restarting && cfg.GracefulRestart, peers: map[netip.Addr]PeerSpec{},
		nextHops: plan.Local, stop: cancel, notify: make(chan struct{}, 1)}
	global := &api.Global{Asn: plan.LocalASN, RouterId: plan.RouterID.String(), ListenPort: int32(cfg.Port)}
	if err := s.StartBgp(ctx, &api.StartBgpRequest{Global: global}); err != nil {
		cancel()
		s.Stop()
		return nil, fmt.Errorf("start bgp server: %w", err)
	}
	if err := installPolicies(ctx, s); err != nil {
		sp.Stop()
		return nil, err
	}
	err := s.WatchEvent(ctx, &api.WatchEventRequest{
		Peer: &api.WatchEventRequest_Peer{},
		Table: &api.WatchEventRequest_Table{Filters: []*api.WatchEventRequest_Table_Filter{
			{Type: api.WatchEventRequest_Table_Filter_BEST, Init: true},
			{Type: api.WatchEventRequest_Table_Filter_EOR},
		}},
	}, sp.onEvent)
	if err != nil {
		sp.Stop()
		return nil, fmt.Errorf("watch bgp events: %w", err)
	}
	return sp, nil
}

// onEvent runs on gobgp's goroutine: it decodes and queues, never blocks.
func (sp *Speaker) onEvent(r *api.WatchEventResponse) {
	var ev speakerEvent
	switch e := r.Event.(type) {
	case *api.WatchEventResponse_Peer:
		st := e.Peer.GetPeer().GetState()
		ev.peer, _ = netip.ParseAddr(st.GetNeighborAddress())
		ev.state = st.GetSessionState().String()
	case *api.WatchEventResponse_Table:
		for _, p := range e.Table.GetPaths() {
			if p.GetNlri() == nil {
				// An End-of-RIB marker: a path without NLRI from a peer.
				if a, err := netip.ParseAddr(p.NeighborIp); err == nil {
					ev.eorFrom = a
				}
				continue
			}
			bp, err := bestPathFrom(p)
			if err != nil {
				sp.log.Debug("Ignoring path", "error", err)
				continue
			}
			ev.paths = append(ev.paths, bp)
		}
	default:
		return
	}
	sp.mu.Lock()
	sp.queue = append(sp.queue, ev)
	sp.mu.Unlock()
	select {
	case sp.notify <- struct{}{}:
	default:
	}
}

// Events returns a channel that has a token when Drain has events.
func (sp *Speaker) Events() <-chan struct{} { return sp.notify }

// Drain returns the queued events.
func (sp *Speaker) Drain() []speakerEvent {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	q := sp.queue
	sp.queue = nil
	return q
}

// SetPeers makes the server's sessions match plan: new peers are added, gone
// ones deleted, changed ones replaced; the others are not touched.
func (sp *Speaker) SetPeers(ctx context.Context, plan PeerPlan) (changed int, err error) {
	var errs []error
	var extDel []netip.Addr
	for addr, old := range sp.peers {
		if want, ok := plan.Peers[addr]; ok && want == old {
			continue
		}
		if err := sp.s.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()}); err != nil {
			errs = append(errs, fmt.Errorf("delete peer %s: %w", addr, err))
			continue
		}
		delete(sp.peers, addr)
		if old.External() {
			extDel = append(extDel, addr)
		}
		changed++
		sp.log.Info("BGP peer removed", "peer", addr, "node", old.Node)
	}
	for addr, want := range plan.Peers {
		if _, ok := sp.peers[addr]; ok {
			continue
		}
		if want.External() {
			// Classify the router before its first path can arrive.
			if err := editDefinedSet(ctx, sp.s, externalPeerSet([]netip.Addr{addr}), true); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := sp.s.AddPeer(ctx, &api.AddPeerRequest{Peer: sp.apiPeer(plan.LocalASN, want)}); err != nil {
			errs = append(errs, fmt.Errorf("add peer %s: %w", addr, err))
			continue
		}
		sp.peers[addr] = want
		changed++
		sp.log.Info("BGP peer added", "peer", addr, "asn", want.ASN, "node", want.Node, "families", want.Families.String(), "rrClient", want.RRClusterID != "")
	}
	if err := editDefinedSet(ctx, sp.s, externalPeerSet(extDel), false); err != nil {
		errs = append(errs, err)
	}
	return changed, errors.Join(errs...)
}

func (sp *Speaker) apiPeer(localASN uint32, p PeerSpec) *api.Peer {
	hold := uint64(sp.cfg.HoldTime / time.Second)
	out := &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: p.Addr.String(), PeerAsn: p.ASN, AuthPassword: p.Password, Description: p.Node},
		Timers:    &api.Timers{Config: &api.TimersConfig{HoldTime: hold, KeepaliveInterval: hold / 3, ConnectRetry: uint64(connectRetry / time.Second)}},
		Transport: &api.Transport{RemotePort: uint32(p.Port), PassiveMode: p.Passive},
	}
	if p.MultihopTTL > 1 {
		out.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(p.MultihopTTL)}
	}
	if p.RRClusterID != "" {
		out.RouteReflector = &api.RouteReflector{RouteReflectorClient: true, RouteReflectorClusterId: p.RRClusterID}
	}
	if sp.cfg.GracefulRestart {
		out.GracefulRestart = &api.GracefulRestart{
			Enabled:      true,
			RestartTime:  uint32(sp.cfg.GracefulRestartTime / time.Second),
			DeferralTime: uint32(sp.cfg.GracefulRestartDeferral / time.Second),
			// Keep a peer's paths when it stops with a NOTIFICATION too (RFC
			// 8538): a DaemonSet rollout stops the agent that way.
			NotificationEnabled: true,
			LocalRestarting:     sp.restarting,
		}
	}
	families := p.Families
	if families == 0 {
		families = familiesOf(p.Addr)
	}
	for _, f := range []struct {
		bit    Families
		family *api.Family
	}{{IPv4, familyV4}, {IPv6, familyV6}} {
		if families&f.bit == 0 {
			continue
		}
		afi := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: f.family, Enabled: true}}
		if sp.cfg.GracefulRestart {
			afi.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
		out.AfiSafis = append(out.AfiSafis, afi)
	}
	return out
}

// Advertise originates and withdraws paths with this node as next hop: its
// address of the prefix's family. A prefix of a family this node has no
// address of is left out (the router reports it).
func (sp *Speaker) Advertise(ctx context.Context, d AdvertDelta) error {
	var errs []error
	for _, p := range d.Withdraw {
		nh := sp.nextHops.For(p.Addr())
		if !nh.IsValid() {
			continue
		}
		path, err := apiPath(p, nh)
		if err == nil {
			err = sp.s.DeletePath(ctx, &api.DeletePathRequest{Family: path.Family, Path: path})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("withdraw %s: %w", p, err))
		}
	}
	for _, p := range d.Add {
		nh := sp.nextHops.For(p.Addr())
		if !nh.IsValid() {
			continue
		}
		path, err := apiPath(p, nh)
		if err == nil {
			_, err = sp.s.AddPath(ctx, &api.AddPathRequest{Path: path})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("advertise %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// SetClusterPrefixes edits the import policy's set of cluster prefixes and,
// when it changed, re-applies import policy to what external routers sent.
func (sp *Speaker) SetClusterPrefixes(ctx context.Context, add, remove []netip.Prefix) error {
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	for _, set := range clusterPrefixSets(add) {
		if err := editDefinedSet(ctx, sp.s, set, true); err != nil {
			return err
		}
	}
	for _, set := range clusterPrefixSets(remove) {
		if err := editDefinedSet(ctx, sp.s, set, false); err != nil {
			return err
		}
	}
	var errs []error
	for addr, p := range sp.peers {
		if !p.External() {
			continue
		}
		err := sp.s.ResetPeer(ctx, &api.ResetPeerRequest{Address: addr.String(), Soft: true, Direction: api.ResetPeerRequest_IN})
		if err != nil {
			errs = append(errs, fmt.Errorf("re-apply import policy to %s: %w", addr, err))
		}
	}
	return errors.Join(errs...)
}

// Stop stops the server. With graceful restart the peers keep our paths for
// the restart time (we stop with a NOTIFICATION they are told to survive).
func (sp *Speaker) Stop() {
	sp.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sp.s.StopBgp(ctx, &api.StopBgpRequest{}); err != nil {
		sp.log.Warn("Stopping BGP server", "error", err)
	}
}
