package nft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
	// NetNSFd is the network namespace the table is programmed into (0: the
	// current one): the firewall sets its br_netfilter sysctls and deletes
	// conntrack entries there.
	NetNSFd int
	// KeepEstablished (--netpol-keep-established) leaves connections that a
	// policy starts denying running until they end, as kube-router does;
	// by default their conntrack entries are deleted so that their next
	// packet is judged again.
	KeepEstablished bool
}

// Firewall is the NetworkPolicy part of the table.
type Firewall struct {
	cfg          FirewallConfig
	log          *slog.Logger
	table        *ruleset.Table
	planner      *netpol.Planner
	policyErrors prometheus.Gauge
	flowsDeleted prometheus.Counter
	sweepErrors  prometheus.Counter
	denied       *deniedCollector
	reported     map[model.PolicyKey]string // compile errors already reported
	noBridge     bool                       // br_netfilter absence already logged
	// sweep says a planned change may deny flows conntrack still holds;
	// it stays set until a sweep of the conntrack table succeeded.
	sweep bool
}

// NewFirewall returns the firewall part, writing into t.
func NewFirewall(t *ruleset.Table, cfg FirewallConfig) (*Firewall, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("firewall: node name is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nfrouter", Subsystem: "firewall",
		Name: "policies_failed_closed", Help: "Network policies that could not be compiled and isolate their pods."})
	deleted := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nfrouter", Subsystem: "firewall",
		Name: "conntrack_entries_deleted_total", Help: "Conntrack entries of connections deleted because a policy started denying them."})
	sweepErrors := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nfrouter", Subsystem: "firewall",
		Name: "conntrack_errors_total", Help: "Failed passes over the conntrack table to delete connections policies began to deny."})
	denied := newDeniedCollector(cfg.NetNSFd)
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{g, deleted, sweepErrors, denied} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("firewall: register metrics: %w", err)
			}
		}
	}
	f := &Firewall{cfg: cfg, log: log.With("part", "firewall"), table: t, policyErrors: g, flowsDeleted: deleted, sweepErrors: sweepErrors, denied: denied,
		planner:  netpol.New(t, netpol.Config{NodeName: cfg.NodeName, DefaultDeny: cfg.DefaultDeny}),
		reported: map[model.PolicyKey]string{}}
	denied.set(f.planner.DenyChains())
	return f, nil
}

// Name implements Part.
func (f *Firewall) Name() string { return "firewall" }

// Kinds implements Part: the firewall reads pods, namespaces, policies and
// nodes (for the pod CIDRs of --netpol-default-deny).
func (f *Firewall) Kinds() model.Kinds {
	return model.KindPods | model.KindNamespaces | model.KindPolicies | model.KindNodes
}

// Plan implements Part.
func (f *Firewall) Plan(ctx context.Context, state *model.State, changes *model.Changes) {
	res := f.planner.Update(state, changes)
	f.reportPolicies(ctx, state, res.Policies)
	if len(res.Policies) > 0 {
		f.denied.set(f.planner.DenyChains())
	}
	f.sweep = f.sweep || (res.MayDeny && !f.cfg.KeepEstablished)
}

// Applied implements Applied: once the kernel holds a change that may deny
// established flows, it deletes their conntrack entries; on every full sync
// (first, periodic, after a failure) it checks the br_netfilter sysctls,
// since the module may be loaded, or a sysctl reset, after we start.
func (f *Firewall) Applied(ctx context.Context, full bool) error {
	if f.sweep {
		// Without conntrack netlink (a module missing, a namespace that
		// forbids it) denied connections live on, but the policies are
		// programmed: report it and try again after the next sync, never
		// fail the sync for it.
		if err := f.deleteDeniedFlows(ctx); err != nil {
			f.sweepErrors.Inc()
			f.log.WarnContext(ctx, "cannot delete the conntrack entries of connections policies now deny; they run on until they end", "error", err)
		} else {
			f.sweep = false
		}
	}
	if !full {
		return nil
	}
	return f.ensureBridgeNF(ctx)
}

// deleteDeniedFlows deletes the conntrack entries of the flows the
// programmed policies deny.
func (f *Firewall) deleteDeniedFlows(ctx context.Context) error {
	start := time.Now()
	sweep, err := deleteDeniedFlows(f.cfg.NetNSFd, func(pkt ruleset.Packet) (bool, error) {
		v, err := netpol.Judge(f.table, pkt)
		return !v.Allowed, err
	})
	f.flowsDeleted.Add(float64(sweep.Deleted))
	if err != nil {
		return err
	}
	lvl := slog.LevelDebug
	if sweep.Deleted > 0 {
		lvl = slog.LevelInfo
	}
	f.log.Log(ctx, lvl, "deleted conntrack entries of connections policies now deny",
		"deleted", sweep.Deleted, "checked", sweep.Checked, "duration", time.Since(start))
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

// reportPolicies logs and records an event for each changed policy that
// fails closed, once per distinct error.
func (f *Firewall) reportPolicies(ctx context.Context, state *model.State, keys []model.PolicyKey) {
	for _, k := range keys {
		pol := state.Policies[k]
		if pol == nil || pol.Err == "" {
			if _, ok := f.reported[k]; ok && pol != nil {
				f.log.InfoContext(ctx, "network policy compiles again", "policy", k.String())
			}
			delete(f.reported, k)
			continue
		}
		if f.reported[k] == pol.Err {
			continue
		}
		f.reported[k] = pol.Err
		f.log.WarnContext(ctx, "network policy cannot be compiled; isolating the pods it selects", "policy", k.String(), "error", pol.Err)
		if f.cfg.Events != nil {
			f.cfg.Events.PolicyEvent(k, "Warning", "PolicyFailedClosed",
				"nfrouter cannot compile this policy and isolates the pods it selects: "+pol.Err)
		}
	}
	f.policyErrors.Set(float64(len(f.reported)))
}
