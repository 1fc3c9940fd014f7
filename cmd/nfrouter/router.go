package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/nfrouter/nfrouter/watch"
)

// routerOptions are the BGP router's flags (--run-router enables it).
type routerOptions struct{}

func (r *routerOptions) addFlags(fs *pflag.FlagSet) {}

// validate returns one message per invalid flag.
func (r *routerOptions) validate() []string { return nil }

// newRouter builds the BGP router backend; close stops it.
func newRouter(o *options, nodeName string, log *slog.Logger, reg prometheus.Registerer, events *eventRecorder) (b watch.Backend, close func() error, err error) {
	log.Warn("The router is not implemented in this build yet; ignoring", "flag", "--run-router")
	return nil, nil, nil
}
