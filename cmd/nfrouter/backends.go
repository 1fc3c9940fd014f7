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
	var parts []nftPart
	if w.o.runFirewall {
		parts = append(parts, firewallPart(w))
	}
	for _, add := range []struct {
		enabled bool
		flag    string
		build   func(wiring) (watch.Backend, func() error, []nftPart, error)
	}{
		{w.o.runServiceProxy, "--run-service-proxy", newServiceProxy},
		{w.o.runRouter, "--run-router", newRouter},
	} {
		if !add.enabled {
			continue
		}
		backend, closer, more, err := add.build(w)
		if err != nil {
			b.close(w.log)
			return nil, fmt.Errorf("%s: %w", add.flag, err)
		}
		if backend != nil {
			b.list = append(b.list, backend)
		}
		if closer != nil {
			b.closers = append(b.closers, closer)
		}
		for _, p := range more {
			if p != nil {
				parts = append(parts, p)
			}
		}
	}
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

// dryRunParts are the parts --dry-run renders: the firewall, and the
// service proxy in nftables mode. They register no metrics and record no
// events.
func dryRunParts(w wiring) []nftPart {
	w.reg, w.events = nil, nil
	var parts []nftPart
	if w.o.runFirewall {
		parts = append(parts, firewallPart(w))
	}
	if w.o.runServiceProxy {
		if mode, _ := proxyMode(w.o.proxy.mode, ipvs.Available); mode == proxyModeNFTables {
			parts = append(parts, nftablesProxyPart(w))
		}
	}
	return parts
}

// close releases the backends' kernel sockets; what they programmed stays.
func (b *backends) close(log *slog.Logger) {
	for _, c := range b.closers {
		if err := c(); err != nil {
			log.Warn("Closing backend", "error", err)
		}
	}
}
