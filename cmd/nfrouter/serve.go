package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nfrouter/nfrouter/watch"
)

// serveMetrics serves Prometheus metrics from reg until ctx is done, and
// with pprofToo Go's profiles under /debug/pprof/.
func serveMetrics(ctx context.Context, addr string, port uint16, path string, reg *prometheus.Registry, pprofToo bool, log *slog.Logger) error {
	return serve(ctx, "metrics", net.JoinHostPort(addr, strconv.Itoa(int(port))), metricsHandler(path, reg, pprofToo), log)
}

// metricsHandler serves reg at path, and Go's profiles with pprofToo.
func metricsHandler(path string, reg *prometheus.Registry, pprofToo bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if pprofToo {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// serveHealth serves /healthz (liveness: 503 once a backend has failed, or not
// synced since start, for longer than the sync period) and /readyz (503 until
// every backend has synced once), each with the reason.
func serveHealth(ctx context.Context, addr string, port uint16, health *watch.Health, log *slog.Logger) error {
	mux := http.NewServeMux()
	for path, check := range map[string]func() error{"/healthz": health.Check, "/readyz": health.Ready} {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			if err := check(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
	}
	return serve(ctx, "health", net.JoinHostPort(addr, strconv.Itoa(int(port))), mux, log)
}

// serve listens at once, so that a busy port fails start-up, and serves in the
// background until ctx is done.
func serve(ctx context.Context, name, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s server: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdownCtx) //nolint:errcheck // best effort at exit
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("Server stopped", "server", name, "error", err)
		}
	}()
	log.Info("Serving", "server", name, "addr", ln.Addr().String())
	return nil
}

// newBuildInfo is nfrouter_build_info: 1, labelled with the version and the
// Go release that built it.
func newBuildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "nfrouter", Name: "build_info",
		Help:        "Always 1; the labels say which nfrouter runs.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
