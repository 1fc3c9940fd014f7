package main

import (
	"context"
	"encoding/json"
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

// serveProxyHealthz serves kube-proxy's /healthz and /livez (its
// --healthz-bind-address, 10256 by default), for load balancers and probes
// written for kube-proxy: 200 while every backend keeps up, else 503, with
// kube-proxy's JSON. nodeEligible is always true: nfrouter does not take a
// node that is being deleted out of load balancers by itself.
func serveProxyHealthz(ctx context.Context, addr string, health *watch.Health, log *slog.Logger) error {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, _ *http.Request) {
		err := health.Check()
		body := map[string]any{"currentTime": time.Now().UTC().Format(time.RFC3339Nano), "nodeEligible": true}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err != nil {
			body["error"] = err.Error()
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(body) //nolint:errcheck // the client went away
	}
	mux.HandleFunc("/healthz", answer)
	mux.HandleFunc("/livez", answer)
	return serve(ctx, "proxy-healthz", addr, mux, log)
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
