package nft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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

	sysctlErrors   map[string]string // sysctl path → error already reported
	sysctlsUnset   prometheus.Gauge
	sysctlFailures *prometheus.CounterVec
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
	unset := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nfrouter", Subsystem: "firewall",
		Name: "sysctls_unset", Help: "Sysctls the firewall needs (bridge-nf-call-ip(6)tables) that are not set and cannot be written."})
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nfrouter", Subsystem: "firewall",
		Name: "sysctl_failures_total", Help: "Checks that found a sysctl the firewall needs unset and could not set it."}, []string{"sysctl"})
	deleted := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nfrouter", Subsystem: "firewall",
		Name: "conntrack_entries_deleted_total", Help: "Conntrack entries of connections deleted because a policy started denying them."})
	sweepErrors := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nfrouter", Subsystem: "firewall",
		Name: "conntrack_errors_total", Help: "Failed passes over the conntrack table to delete connections policies began to deny."})
	denied := newDeniedCollector(cfg.NetNSFd)
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{g, deleted, sweepErrors, denied, unset, failures} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("firewall: register metrics: %w", err)
			}
		}
	}
	f := &Firewall{cfg: cfg, log: log.With("part", "firewall"), table: t, policyErrors: g, flowsDeleted: deleted, sweepErrors: sweepErrors, denied: denied,
		planner:  netpol.New(t, netpol.Config{NodeName: cfg.NodeName, DefaultDeny: cfg.DefaultDeny}),
		reported: map[model.PolicyKey]string{}, sysctlErrors: map[string]string{},
		sysctlsUnset: unset, sysctlFailures: failures}
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
// since the module may be loaded, or a sysctl reset, after we start. A sysctl
// it cannot set does not fail the sync (DESIGN principle 8): routed pods and
// everything else the table does are unaffected; it is a degradation,
// reported by reportBridgeNF.
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
	f.ensureBridgeNF(ctx)
	return nil
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
func (f *Firewall) ensureBridgeNF(ctx context.Context) {
	results, err := ensureBridgeNF(f.cfg.NetNSFd)
	if errors.Is(err, errNoBridgeNF) {
		if !f.noBridge {
			f.log.InfoContext(ctx, "br_netfilter not loaded; pods on a bridge would bypass network policies", "error", err)
		}
		f.noBridge = true
		results = nil
	} else if err != nil {
		// Only entering the namespace can fail here: the same degradation.
		results = make([]sysctlResult, len(bridgeNFSysctls))
		for i, p := range bridgeNFSysctls {
			results[i] = sysctlResult{Path: p, Err: err}
		}
	} else {
		f.noBridge = false
	}
	for _, r := range results {
		if r.Changed {
			f.log.InfoContext(ctx, "set sysctl so that bridged pod traffic passes network policies", "sysctl", sysctlName(r.Path), "value", 1)
		}
	}
	f.reportBridgeNF(ctx, results)
}

// reportBridgeNF reports each bridge-nf-call sysctl that is not 1 and cannot
// be set — a log line and a Warning Event on the node when it starts or its
// error changes, a counted failure every time — and each that recovers.
func (f *Firewall) reportBridgeNF(ctx context.Context, results []sysctlResult) {
	failing := map[string]string{}
	for _, r := range results {
		if r.Err == nil {
			continue
		}
		msg := r.Err.Error()
		failing[r.Path] = msg
		f.sysctlFailures.WithLabelValues(sysctlName(r.Path)).Inc()
		if f.sysctlErrors[r.Path] == msg {
			continue
		}
		f.log.WarnContext(ctx, "cannot set sysctl: pods on a bridge bypass network policies until it is 1 "+
			"(set it on the node, or run nfrouter with a writable /proc/sys)", "sysctl", sysctlName(r.Path), "error", msg)
		if f.cfg.Events != nil {
			f.cfg.Events.NodeEvent(f.cfg.NodeName, "Warning", "SysctlNotSet",
				fmt.Sprintf("nfrouter cannot set %s=1, so pods on a bridge bypass network policies: %s", sysctlName(r.Path), msg))
		}
	}
	for p := range f.sysctlErrors {
		if _, ok := failing[p]; !ok {
			f.log.InfoContext(ctx, "sysctl is set now", "sysctl", sysctlName(p))
		}
	}
	f.sysctlErrors = failing
	f.sysctlsUnset.Set(float64(len(failing)))
}

// sysctlName turns /proc/sys/net/bridge/bridge-nf-call-iptables into
// net.bridge.bridge-nf-call-iptables, as sysctl(8) names it.
func sysctlName(path string) string {
	return strings.ReplaceAll(strings.TrimPrefix(path, "/proc/sys/"), "/", ".")
}

// reportPolicies logs and records an event for each changed policy that
// fails closed, once per distinct error.
func (f *Firewall) reportPolicies(ctx context.Context, state *model.State, keys []model.PolicyKey) {
	for _, k := range keys {
		pol := state.Policies.Get(k)
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
