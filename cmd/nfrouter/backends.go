package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/watch"
)

// newBackends builds the backends the --run-* flags ask for.
func newBackends(o *options, nodeName string, log *slog.Logger, reg prometheus.Registerer) ([]watch.Backend, error) {
	var backends []watch.Backend
	for _, b := range []struct {
		enabled bool
		flag    string
	}{
		{o.runFirewall, "--run-firewall"},
		{o.runServiceProxy, "--run-service-proxy"},
		{o.runRouter, "--run-router"},
	} {
		if b.enabled {
			log.Warn("Not implemented in this build yet; ignoring", "flag", b.flag)
		}
	}
	return backends, nil
}
