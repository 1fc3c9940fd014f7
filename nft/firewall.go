package nft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/google/nftables"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/netpol"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// FirewallConfig configures the NetworkPolicy firewall.
type FirewallConfig struct {
	// NodeName is this node's name (--hostname-override); its pods are the
	// ones the firewall protects.
	NodeName string
	// DefaultDeny (--netpol-default-deny) drops traffic of addresses in the
	// node's pod CIDRs that are not yet programmed as pods.
	DefaultDeny bool
	Logger      *slog.Logger          // nil: slog.Default()
	Registerer  prometheus.Registerer // nil: no metrics
	Events      EventRecorder         // nil: no Kubernetes events
	// NetNSFd is an open network namespace to program; 0 means the current
	// one. Tests use it.
	NetNSFd int
}

// Firewall is the NetworkPolicy backend: it implements watch.Backend.
type Firewall struct {
	cfg     FirewallConfig
	log     *slog.Logger
	metrics *metrics

	// mu serializes Sync and guards the fields below.
	mu       sync.Mutex
	table    *ruleset.Table
	planner  *netpol.Planner
	applier  *applier
	needFull bool
	reported map[model.PolicyKey]string // compile errors already reported
	last     Stats
	noBridge bool // br_netfilter absence already logged
}

// NewFirewall opens the netlink socket and returns a firewall that programs
// nothing until the first Sync.
func NewFirewall(cfg FirewallConfig) (*Firewall, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("firewall: node name is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("firewall: register metrics: %w", err)
	}
	a, err := newApplier(nftables.TableFamilyINet, netpol.Table, cfg.NetNSFd)
	if err != nil {
		return nil, fmt.Errorf("firewall: %w", err)
	}
	t := ruleset.NewTable(netpol.Family, netpol.Table)
	return &Firewall{cfg: cfg, log: log.With("backend", "firewall"), metrics: m, table: t,
		planner: netpol.New(t, netpol.Config{NodeName: cfg.NodeName, DefaultDeny: cfg.DefaultDeny}),
		applier: a, needFull: true, reported: map[model.PolicyKey]string{}}, nil
}

// Name implements watch.Backend.
func (f *Firewall) Name() string { return "firewall" }

// Kinds implements watch.Backend: the firewall reads pods, namespaces,
// policies and nodes (for the pod CIDRs of --netpol-default-deny).
func (f *Firewall) Kinds() model.Kinds {
	return model.KindPods | model.KindNamespaces | model.KindPolicies | model.KindNodes
}

// Sync implements watch.Backend. An incremental sync with nothing to change
// sends nothing to the kernel; a full sync (first, periodic, after a failure)
// reads our table back and repairs what differs.
func (f *Firewall) Sync(ctx context.Context, state *model.State, changes *model.Changes) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := time.Now()
	full := f.needFull || changes == nil || changes.Full
	if full {
		changes = &model.Changes{Full: true}
	}
	res := f.planner.Update(state, changes)
	f.reportPolicies(state, res.Policies)
	stats, err := f.applier.apply(f.table, full)
	f.metrics.observe(stats, err)
	f.metrics.syncDuration.Observe(time.Since(start).Seconds())
	f.last = stats
	if err != nil {
		f.needFull = true
		return fmt.Errorf("firewall: %w", err)
	}
	if full {
		// Checked on every full sync (first, periodic, after a failure):
		// br_netfilter may be loaded, or a sysctl reset, after we start.
		if err := f.ensureBridgeNF(ctx); err != nil {
			f.needFull = true
			return fmt.Errorf("firewall: %w", err)
		}
	}
	f.needFull = false
	if stats.Messages > 0 {
		lvl := slog.LevelDebug
		if full || stats.ChainsRewritten > 0 || len(res.Policies) > 0 {
			lvl = slog.LevelInfo
		}
		f.log.Log(ctx, lvl, "programmed firewall", "full", full, "messages", stats.Messages, "bytes", stats.Bytes,
			"elements_added", stats.ElementsAdded, "elements_removed", stats.ElementsRemoved,
			"chains_rewritten", stats.ChainsRewritten, "policies_changed", len(res.Policies),
			"duration", time.Since(start))
	}
	return nil
}

// ensureBridgeNF makes bridged pod traffic pass the policy chains (see
// bridgenf.go), logging each sysctl it changes and, once, br_netfilter's
// absence.
func (f *Firewall) ensureBridgeNF(ctx context.Context) error {
	changed, err := ensureBridgeNF(f.cfg.NetNSFd)
	if errors.Is(err, errNoBridgeNF) {
		if !f.noBridge {
			f.log.InfoContext(ctx, "br_netfilter not loaded; pods on a bridge would bypass network policies", "error", err)
		}
		f.noBridge = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("enable br_netfilter for bridged pods: %w", err)
	}
	f.noBridge = false
	for _, s := range changed {
		f.log.InfoContext(ctx, "set sysctl so that bridged pod traffic passes network policies", "sysctl", s, "value", 1)
	}
	return nil
}

// LastStats returns the statistics of the last transaction Sync attempted.
func (f *Firewall) LastStats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// Close closes the netlink socket; the programmed table stays.
func (f *Firewall) Close() error { return f.applier.close() }

// reportPolicies logs and records an event for each changed policy that
// fails closed, once per distinct error.
func (f *Firewall) reportPolicies(state *model.State, keys []model.PolicyKey) {
	for _, k := range keys {
		pol := state.Policies[k]
		if pol == nil || pol.Err == "" {
			if _, ok := f.reported[k]; ok && pol != nil {
				f.log.Info("network policy compiles again", "policy", k.String())
			}
			delete(f.reported, k)
			continue
		}
		if f.reported[k] == pol.Err {
			continue
		}
		f.reported[k] = pol.Err
		f.log.Warn("network policy cannot be compiled; isolating the pods it selects", "policy", k.String(), "error", pol.Err)
		if f.cfg.Events != nil {
			f.cfg.Events.PolicyEvent(k, "Warning", "PolicyFailedClosed",
				"nfrouter cannot compile this policy and isolates the pods it selects: "+pol.Err)
		}
	}
	f.metrics.policyErrors.Set(float64(len(f.reported)))
}

// RenderFirewall writes the ruleset the firewall would program for state, in
// nft syntax, touching nothing (--dry-run). The output loads with `nft -f`.
func RenderFirewall(w io.Writer, state *model.State, cfg FirewallConfig) error {
	t := ruleset.NewTable(netpol.Family, netpol.Table)
	netpol.New(t, netpol.Config{NodeName: cfg.NodeName, DefaultDeny: cfg.DefaultDeny}).Update(state, &model.Changes{Full: true})
	return ruleset.Render(w, t)
}
