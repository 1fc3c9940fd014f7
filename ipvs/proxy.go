package ipvs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cloudflare/ipvs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/conntrack"
)

// Config configures the IPVS service proxy.
type Config struct {
	PlanConfig
	// GracePeriod is how long a removed destination may drain at weight 0
	// before it is deleted; 0 deletes it at once.
	GracePeriod time.Duration
	// NodePortMin and NodePortMax are the cluster's NodePort range (default
	// 30000-32767), used to recognise our NodePort services after a restart.
	NodePortMin, NodePortMax uint16
	Logger                   *slog.Logger          // nil: slog.Default()
	Registerer               prometheus.Registerer // nil: no metrics
	Events                   EventRecorder         // nil: no Kubernetes events
	Clock                    clock.WithTicker      // nil: the real clock
	// IPVS and Addresses reach the kernel; nil opens netlink sockets in the
	// network namespace of the calling thread. Tests pass fakes.
	IPVS      IPVS
	Addresses Addresses
	// SysctlRoot is where the IPVS sysctls are written; "" is
	// /proc/sys/net/ipv4/vs, "-" skips them (tests with fakes).
	SysctlRoot string
}

// Proxy is the IPVS service proxy backend: it implements watch.Backend.
type Proxy struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	closers []io.Closer

	// mu serializes syncs and drains and guards the fields below.
	mu       sync.Mutex
	planner  *Planner
	applier  *applier
	needFull bool
	last     Stats
	pending  pendingFlows // conntrack deletions still to do (stale.go)

	// ct deletes conntrack entries; nil with fakes, or with ctErr when
	// conntrack netlink cannot be opened (then every pass fails, counted).
	ct    *netlink.Handle
	ctErr error
}

// Available reports whether the kernel of the calling thread's network
// namespace offers IPVS (the generic netlink family exists), for
// --service-proxy=auto.
func Available() error {
	c, err := ipvs.New()
	if err != nil {
		return fmt.Errorf("IPVS: %w", err)
	}
	if cl, ok := c.(io.Closer); ok {
		cl.Close()
	}
	return nil
}

// New returns a proxy that programs nothing until the first Sync. Without
// fakes in cfg it opens its netlink sockets and sets the IPVS sysctls in the
// network namespace of the calling thread.
func New(cfg Config) (*Proxy, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("ipvs proxy: node name is required")
	}
	if cfg.NodePortMin == 0 && cfg.NodePortMax == 0 {
		cfg.NodePortMin, cfg.NodePortMax = 30000, 32767
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("backend", "service-proxy", "mode", "ipvs")
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("ipvs proxy: register metrics: %w", err)
	}
	p := &Proxy{cfg: cfg, log: log, metrics: m, planner: NewPlanner(cfg.PlanConfig), needFull: true,
		pending: pendingFlows{gone: map[conntrack.ServiceAddr]struct{}{}}}
	if cfg.IPVS == nil {
		// Opened here, with the other sockets, in the namespace to program.
		if h, err := conntrack.Handle(0); err != nil {
			p.ctErr = err
			log.Warn("cannot open conntrack netlink: UDP and SCTP flows of removed destinations stay pinned until they end", "error", err)
		} else {
			p.ct = h
			p.closers = append(p.closers, closerFunc(func() error { h.Close(); return nil }))
		}
		c, err := ipvs.New()
		if err != nil {
			return nil, fmt.Errorf("ipvs proxy: open IPVS netlink: %w", err)
		}
		if cl, ok := c.(io.Closer); ok {
			p.closers = append(p.closers, cl)
		}
		cfg.IPVS = dumpClient{c}
	}
	if cfg.Addresses == nil {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("ipvs proxy: open rtnetlink: %w", err)
		}
		p.closers = append(p.closers, closerFunc(func() error { h.Close(); return nil }))
		cfg.Addresses = newDummyLink(h, DummyInterface)
	}
	switch cfg.SysctlRoot {
	case "-":
	case "":
		cfg.SysctlRoot = "/proc/sys/net/ipv4/vs"
		fallthrough
	default:
		p.reportSysctls(cfg, setSysctls(cfg.SysctlRoot))
	}
	p.cfg = cfg
	p.applier = newApplier(cfg.IPVS, cfg.Addresses, cfg.Clock, cfg.GracePeriod, cfg.NodePortMin, cfg.NodePortMax)
	return p, nil
}

// reportSysctls reports IPVS sysctls that are not set and cannot be: a
// degradation, not a failure (DESIGN principle 8): services are still
// proxied, but NAT and filtering may not see IPVS connections, and clients
// of removed or draining destinations may hang until they time out.
func (p *Proxy) reportSysctls(cfg Config, failed []sysctlFailure) {
	p.metrics.sysctlsUnset.Set(float64(len(failed)))
	for _, f := range failed {
		p.metrics.sysctlFailures.WithLabelValues(f.Name).Inc()
		p.log.Warn("Cannot set IPVS sysctl; NAT and filtering of service traffic may not see IPVS connections "+
			"(set it on the node, or run nfrouter with a writable /proc/sys)", "sysctl", f.Name, "error", f.Err)
		if cfg.Events != nil {
			cfg.Events.NodeEvent(cfg.NodeName, "Warning", "SysctlNotSet",
				fmt.Sprintf("nfrouter cannot set %s=1 for the IPVS service proxy: %v", f.Name, f.Err))
		}
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Name implements watch.Backend.
func (p *Proxy) Name() string { return "service-proxy" }

// Kinds implements watch.Backend: service ports, their endpoints, and nodes
// (this node's addresses carry the NodePorts).
func (p *Proxy) Kinds() model.Kinds {
	return model.KindServicePorts | model.KindEndpoints | model.KindNodes
}

// Sync implements watch.Backend. An incremental sync programs only the virtual
// services of the changed service ports and lists nothing; a full sync (first,
// periodic, after a failure) reads IPVS and the dummy interface back and
// repairs what differs.
func (p *Proxy) Sync(ctx context.Context, state *model.State, changes *model.Changes) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := p.cfg.Clock.Now()
	full := p.needFull || changes == nil || changes.Full
	if full {
		changes = &model.Changes{Full: true}
	}
	res := p.planner.Update(state, changes)
	p.report(res.Problems)

	p.applier.begin()
	var err error
	kind := "incremental"
	if full {
		kind = "full"
		err = p.applier.repair(p.planner)
	} else {
		err = p.applier.apply(p.planner, res)
	}
	stats := p.applier.end()
	p.last = stats
	p.metrics.observe(kind, stats, p.planner.InvalidPorts(), err)
	elapsed := p.cfg.Clock.Since(start)
	p.metrics.syncDuration.Observe(elapsed.Seconds())
	if err != nil {
		p.needFull = true
		return fmt.Errorf("ipvs proxy: %w", err)
	}
	p.needFull = false
	p.deleteStaleFlows(ctx, full)
	if n := stats.Total(); n > 0 {
		lvl := slog.LevelDebug
		if full || len(res.VIPsAdded)+len(res.VIPsRemoved) > 0 {
			lvl = slog.LevelInfo
		}
		p.log.Log(ctx, lvl, "Programmed IPVS", "full", full, "operations", n,
			"changed", len(res.Changed), "services", stats.Services, "destinations", stats.Destinations,
			"draining", stats.Draining, "duration", elapsed)
	}
	return nil
}

// Drain deletes draining destinations whose connections ended or whose grace
// period is over. RunDrainer calls it periodically.
func (p *Proxy) Drain(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.applier.draining) == 0 {
		return nil
	}
	p.applier.begin()
	err := p.applier.reapAll(nil)
	stats := p.applier.end()
	p.last = stats
	p.metrics.observe("drain", stats, p.planner.InvalidPorts(), err)
	if err != nil {
		p.needFull = true
		return fmt.Errorf("ipvs proxy: drain: %w", err)
	}
	if n := stats.Ops["remove_destination"]; n > 0 {
		p.log.Debug("Removed drained destinations", "destinations", n, "draining", stats.Draining)
	}
	return nil
}

// RunDrainer calls Drain every interval until ctx is done. Failures are
// logged; the next full sync repairs what they left.
func (p *Proxy) RunDrainer(ctx context.Context, interval time.Duration) {
	t := p.cfg.Clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if err := p.Drain(ctx); err != nil {
				p.log.Warn("Draining destinations failed", "error", err)
			}
		}
	}
}

// LastStats returns the statistics of the last sync.
func (p *Proxy) LastStats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Close closes the netlink sockets; what was programmed stays.
func (p *Proxy) Close() error {
	var errs []error
	for _, c := range p.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// report logs and records an Event for each service port whose problem
// changed.
func (p *Proxy) report(problems []Problem) {
	for _, pr := range problems {
		if pr.Message == "" {
			p.log.Info("Service port programmed as annotated again", "service", pr.Port.String())
			continue
		}
		p.log.Warn("Service port keeps its previous IPVS programming", "service", pr.Port.String(),
			"reason", pr.Reason, "error", pr.Message)
		if p.cfg.Events != nil {
			p.cfg.Events.ServiceEvent(pr.Port.Service(), "Warning", pr.Reason,
				fmt.Sprintf("nfrouter keeps the previous IPVS programming of port %q: %s", pr.Port.Port, pr.Message))
		}
	}
}
