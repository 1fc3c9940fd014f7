package main

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/ipvs"
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

// wiring is what newBackends needs to build a backend.
type wiring struct {
	o        *options
	nodeName string
	log      *slog.Logger
	reg      prometheus.Registerer // nil: no metrics
	events   *eventRecorder        // nil: no Kubernetes events
}

func newBackends(w wiring) (*backends, error) {
	b := &backends{}
	mode := w.proxyMode()
	if mode == proxyModeIPVS {
		backend, closer, err := newIPVSProxy(w)
		if err != nil {
			return nil, fmt.Errorf("--run-service-proxy: %w", err)
		}
		b.list, b.closers = append(b.list, backend), append(b.closers, closer)
	}
	if w.o.runRouter {
		backend, closer, err := newRouter(w)
		if err != nil {
			b.close(w.log)
			return nil, fmt.Errorf("--run-router: %w", err)
		}
		b.list, b.closers = append(b.list, backend), append(b.closers, closer)
	}
	parts := nftParts(w, mode)
	if len(parts) == 0 {
		return b, nil
	}
	// One nftables backend for every part: one transaction per sync.
	tb, err := nft.New(nft.Config{Logger: w.log, Registerer: w.reg})
	if err != nil {
		b.close(w.log)
		return nil, err
	}
	b.closers = append(b.closers, tb.Close)
	for _, mk := range parts {
		p, err := mk(tb.Table())
		if err != nil {
			b.close(w.log)
			return nil, err
		}
		tb.Add(p)
	}
	// The table first: the firewall is in place before services open.
	b.list = append([]watch.Backend{tb}, b.list...)
	return b, nil
}

// proxyMode is the service proxy mode to run, "" without a service proxy.
func (w wiring) proxyMode() string {
	if !w.o.runServiceProxy {
		return ""
	}
	mode, why := proxyMode(w.o.proxy.mode, ipvs.Available)
	w.log.Info("Service proxy mode chosen", "requested", w.o.proxy.mode, "mode", mode, "why", why)
	return mode
}

// nftParts are the parts of the nftables table that the flags ask for, with
// the service proxy in proxyMode ("" for none).
func nftParts(w wiring, proxyMode string) []nftPart {
	var parts []nftPart
	if w.o.runFirewall {
		parts = append(parts, firewallPart(w))
	}
	switch proxyMode {
	case proxyModeNFTables:
		parts = append(parts, nftablesProxyPart(w))
	case proxyModeIPVS:
		parts = append(parts, ipvsNATPart(w))
	}
	if w.o.runRouter && w.o.router.enablePodEgress {
		parts = append(parts, podEgressPart(w))
	}
	return parts
}

func firewallPart(w wiring) nftPart {
	return func(t *ruleset.Table) (nft.Part, error) {
		cfg := nft.FirewallConfig{NodeName: w.nodeName, DefaultDeny: w.o.netpolDefaultDeny, Logger: w.log, Registerer: w.reg}
		if w.events != nil {
			cfg.Events = w.events
		}
		f, err := nft.NewFirewall(t, cfg)
		if err != nil {
			return nil, fmt.Errorf("--run-firewall: %w", err)
		}
		return f, nil
	}
}

// dryRunParts are the parts --dry-run renders: all of the table the flags
// ask for. They register no metrics and record no events.
func dryRunParts(w wiring) []nftPart {
	w.reg, w.events = nil, nil
	return nftParts(w, w.proxyMode())
}

// close releases the backends' kernel sockets; what they programmed stays.
func (b *backends) close(log *slog.Logger) {
	for _, c := range b.closers {
		if err := c(); err != nil {
			log.Warn("Closing backend", "error", err)
		}
	}
}
