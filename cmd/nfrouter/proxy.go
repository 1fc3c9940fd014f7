package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/nfrouter/nfrouter/watch"
)

// proxyOptions are the service proxy's flags (--run-service-proxy enables it).
type proxyOptions struct{}

func (p *proxyOptions) addFlags(fs *pflag.FlagSet) {}

// validate returns one message per invalid flag.
func (p *proxyOptions) validate() []string { return nil }

// newServiceProxy builds the service proxy backend; close releases its kernel
// sockets.
func newServiceProxy(o *options, nodeName string, log *slog.Logger, reg prometheus.Registerer, events *eventRecorder) (b watch.Backend, close func() error, err error) {
	log.Warn("The service proxy is not implemented in this build yet; ignoring", "flag", "--run-service-proxy")
	return nil, nil, nil
}
