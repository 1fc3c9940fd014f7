package main

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/bgp"
	"github.com/nfrouter/nfrouter/bgp/cni"
	"github.com/nfrouter/nfrouter/cmd/nfrouter/svchealth"
	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/nft/ruleset"
	"github.com/nfrouter/nfrouter/watch"
)

// backends are the backends the --run-* flags ask for.
type backends struct {
	list    []watch.Backend
	closers []func() error
}

// nftPart makes one part of nfrouter's nftables table, writing into t.
type nftPart func(t *ruleset.Table) (nft.Part, error)

// wiring is what the backends are built from.
type wiring struct {
	o         *options
	nodeName  string
	log       *slog.Logger
	proxyMode string                // the resolved --service-proxy; "" without a service proxy
	reg       prometheus.Registerer // nil: no metrics
	health    *watch.Health         // nil: no health-check servers (--once, --dry-run)
	events    eventSink             // nil: no Kubernetes events
}

// eventSink records the backends' Kubernetes events (an *eventRecorder). An
// interface, so that a nil one converts to the backends' nil recorders.
type eventSink interface {
	nft.EventRecorder
	nft.ServiceEventRecorder
	ipvs.EventRecorder
	bgp.EventRecorder
}

func newBackends(w wiring) (*backends, error) {
	b := &backends{}
	if w.proxyMode == proxyModeIPVS {
		backend, closer, err := newIPVSProxy(w)
		if err != nil {
			return nil, fmt.Errorf("--run-service-proxy: %w", err)
		}
		b.list, b.closers = append(b.list, backend), append(b.closers, closer)
	}
	if w.proxyMode != "" && w.health != nil {
		// Load balancers' health checks (healthCheckNodePort) answer from
		// the model, in either proxy mode.
		cfg := svchealth.Config{NodeName: w.nodeName, Healthy: w.health.Check, Log: w.log}
		if w.o.proxy.nodePortAddressesGiven {
			// kube-proxy serves them where it serves NodePorts.
			cidrs := w.o.proxy.nodePortPrefixes
			cfg.Addresses = func(n *model.Node) []netip.Addr { return n.NodePortAddrs(false, cidrs) }
		}
		hc := svchealth.New(cfg)
		b.list, b.closers = append(b.list, hc), append(b.closers, func() error { hc.Close(); return nil })
	}
	if w.o.runRouter {
		backend, closer, err := newRouter(w)
		if err != nil {
			b.close(w.log)
			return nil, fmt.Errorf("--run-router: %w", err)
		}
		b.list, b.closers = append(b.list, backend), append(b.closers, closer)
	}
	if w.o.node.enableCNI {
		b.list = append(b.list, &cni.Writer{NodeName: w.nodeName, Path: w.o.node.cniConfFile, Log: w.log.With("backend", "cni")})
	}
	mks := w.nftParts()
	if len(mks) == 0 {
		return b, nil
	}
	// One nftables backend for every part: one transaction per sync.
	tb, err := nft.New(nft.Config{Logger: w.log, Registerer: w.reg})
	if err != nil {
		b.close(w.log)
		return nil, err
	}
	b.closers = append(b.closers, tb.Close)
	parts, err := makeParts(tb.Table(), mks)
	if err != nil {
		b.close(w.log)
		return nil, err
	}
	for _, p := range parts {
		tb.Add(p)
	}
	// The table first: the firewall is in place before services open.
	b.list = append([]watch.Backend{tb}, b.list...)
	return b, nil
}

// nftParts are the parts of the nftables table that the flags ask for.
func (w wiring) nftParts() []nftPart {
	var parts []nftPart
	if w.o.runFirewall {
		parts = append(parts, firewallPart(w))
	}
	switch w.proxyMode {
	case proxyModeNFTables:
		parts = append(parts, nftablesProxyPart(w))
	case proxyModeIPVS:
		parts = append(parts, ipvsNATPart(w))
	}
	if w.o.runRouter && w.o.router.enablePodEgress {
		parts = append(parts, podEgressPart())
	}
	return parts
}

// makeParts makes every part in t.
func makeParts(t *ruleset.Table, mks []nftPart) ([]nft.Part, error) {
	var out []nft.Part
	for _, mk := range mks {
		p, err := mk(t)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func firewallPart(w wiring) nftPart {
	return func(t *ruleset.Table) (nft.Part, error) {
		f, err := nft.NewFirewall(t, nft.FirewallConfig{
			NodeName: w.nodeName, DefaultDeny: w.o.netpolDefaultDeny, KeepEstablished: w.o.netpolKeepEstablished, Logger: w.log, Registerer: w.reg, Events: w.events,
		})
		if err != nil {
			return nil, fmt.Errorf("--run-firewall: %w", err)
		}
		return f, nil
	}
}

// close releases the backends' kernel sockets; what they programmed stays.
func (b *backends) close(log *slog.Logger) {
	for _, c := range b.closers {
		if err := c(); err != nil {
			log.Warn("Closing backend", "error", err)
		}
	}
}
