package nft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/conntrack"
	"github.com/nfrouter/nfrouter/nft/ruleset"
	"github.com/nfrouter/nfrouter/nft/svcproxy"
)

// ServiceEventRecorder publishes Kubernetes Events about services. The
// command adapts client-go's record.EventRecorder to it.
type ServiceEventRecorder interface {
	// ServiceEvent records an event of type "Normal" or "Warning" on a
	// service.
	ServiceEvent(svc model.ServiceKey, eventType, reason, message string)
}

// ServiceProxyConfig configures the nftables service proxy.
type ServiceProxyConfig struct {
	// NodeName is this node's name (--hostname-override).
	NodeName string
	// NodePortBindOnAllIPs is --nodeport-bindon-all-ip.
	NodePortBindOnAllIPs bool
	// NodePortCIDRs is --nodeport-addresses given as CIDRs.
	NodePortCIDRs []netip.Prefix
	// MasqueradeAll is --masquerade-all.
	MasqueradeAll bool
	// ClusterCIDRs is --cluster-cidr; nil means every node's pod CIDRs.
	ClusterCIDRs []netip.Prefix
	// ServiceCIDRs is --service-cluster-ip-range: traffic to an address in
	// it that no service has is dropped; nil: not dropped.
	ServiceCIDRs []netip.Prefix
	// NetNSFd is the network namespace the table is programmed into (0:
	// the current one): stale conntrack and affinity entries are deleted
	// there.
	NetNSFd    int
	Logger     *slog.Logger          // nil: slog.Default()
	Registerer prometheus.Registerer // nil: no metrics
	Events     ServiceEventRecorder  // nil: no Kubernetes events
}

// ServiceProxy is the nftables service proxy's part of the table
// (--service-proxy=nftables); package svcproxy plans it.
type ServiceProxy struct {
	cfg      ServiceProxyConfig
	log      *slog.Logger
	planner  *svcproxy.Planner
	problems prometheus.Gauge
	current  map[model.ServicePortKey]struct{} // service ports with a problem
	noCIDRs  bool                              // warned that no cluster CIDR is known
	stale    *staleMetrics
	pending  pendingStale // left behind by programmed changes, to clear
}

// NewServiceProxy returns the service proxy part, writing into t.
func NewServiceProxy(t *ruleset.Table, cfg ServiceProxyConfig) (*ServiceProxy, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("service proxy: node name is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nfrouter", Subsystem: "service_proxy",
		Name: "problem_ports", Help: "Service ports not programmed as asked (address conflicts, affinity that cannot be kept)."})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(g); err != nil {
			return nil, fmt.Errorf("service proxy: register metrics: %w", err)
		}
	}
	sm, err := newStaleMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("service proxy: register metrics: %w", err)
	}
	return &ServiceProxy{cfg: cfg, log: log.With("part", "service-proxy"), problems: g, current: map[model.ServicePortKey]struct{}{},
		stale: sm, pending: pendingStale{gone: map[conntrack.ServiceAddr]struct{}{}, affinity: map[string]struct{}{}},
		planner: svcproxy.New(t, svcproxy.Config{NodeName: cfg.NodeName, NodePortBindOnAllIPs: cfg.NodePortBindOnAllIPs,
			NodePortCIDRs: cfg.NodePortCIDRs,
			MasqueradeAll: cfg.MasqueradeAll, ClusterCIDRs: cfg.ClusterCIDRs, ServiceCIDRs: cfg.ServiceCIDRs})}, nil
}

// Name implements Part.
func (s *ServiceProxy) Name() string { return "service-proxy" }

// Kinds implements Part: service ports, their endpoints, and nodes (this
// node's NodePort addresses, everyone's pod CIDRs).
func (s *ServiceProxy) Kinds() model.Kinds {
	return model.KindServicePorts | model.KindEndpoints | model.KindNodes
}

// Plan implements Part.
func (s *ServiceProxy) Plan(ctx context.Context, state *model.State, changes *model.Changes) {
	res := s.planner.Update(state, changes)
	s.pending.add(s.planner.TakeStale())
	for _, p := range res.Problems {
		if p.Message == "" {
			delete(s.current, p.Port)
			s.log.InfoContext(ctx, "service port programmed as asked again", "service_port", p.Port.String())
			continue
		}
		s.current[p.Port] = struct{}{}
		s.log.WarnContext(ctx, "service port not programmed as asked", "service_port", p.Port.String(), "reason", p.Reason, "problem", p.Message)
		if s.cfg.Events != nil {
			s.cfg.Events.ServiceEvent(p.Port.Service(), "Warning", p.Reason, "nfrouter (nftables service proxy): "+p.Message)
		}
	}
	s.problems.Set(float64(len(s.current)))
	if no := s.planner.NoClusterCIDRs(); no != s.noCIDRs {
		s.noCIDRs = no
		if no {
			s.log.WarnContext(ctx, "no cluster CIDR known (no --cluster-cidr, no node with a pod CIDR): connections from pods to services are masqueraded too")
		} else {
			s.log.InfoContext(ctx, "cluster CIDRs known again: pods reach services with their own address")
		}
	}
}
