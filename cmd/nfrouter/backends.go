package main

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/watch"
)

// backends are the backends the --run-* flags ask for.
type backends struct {
	list    []watch.Backend
	closers []func() error
}

func newBackends(o *options, nodeName string, log *slog.Logger, reg prometheus.Registerer, events *eventRecorder) (*backends, error) {
	b := &backends{}
	if o.runFirewall {
		var rec nft.EventRecorder
		if events != nil {
			rec = events
		}
		fw, err := nft.NewFirewall(firewallConfig(o, nodeName, log, reg, rec))
		if err != nil {
			b.close(log)
			return nil, fmt.Errorf("--run-firewall: %w", err)
		}
		b.list = append(b.list, fw)
		b.closers = append(b.closers, fw.Close)
	}
	for _, add := range []struct {
		enabled bool
		flag    string
		build   func(*options, string, *slog.Logger, prometheus.Registerer, *eventRecorder) (watch.Backend, func() error, error)
	}{
		{o.runServiceProxy, "--run-service-proxy", newServiceProxy},
		{o.runRouter, "--run-router", newRouter},
	} {
		if !add.enabled {
			continue
		}
		backend, closer, err := add.build(o, nodeName, log, reg, events)
		if err != nil {
			b.close(log)
			return nil, fmt.Errorf("%s: %w", add.flag, err)
		}
		if backend != nil {
			b.list = append(b.list, backend)
		}
		if closer != nil {
			b.closers = append(b.closers, closer)
		}
	}
	return b, nil
}

func firewallConfig(o *options, nodeName string, log *slog.Logger, reg prometheus.Registerer, events nft.EventRecorder) nft.FirewallConfig {
	return nft.FirewallConfig{
		NodeName:    nodeName,
		DefaultDeny: o.netpolDefaultDeny,
		Logger:      log,
		Registerer:  reg,
		Events:      events,
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
