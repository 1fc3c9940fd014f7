// Command nfrouter is the node agent: it watches the cluster (or reads
// manifests) and programs the node's firewall, service proxy and routes through
// netlink, never by starting a process.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/nft/ruleset"
	"github.com/nfrouter/nfrouter/watch"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command, with its outputs passed in so tests can drive it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, ok := commands[args[0]]
		if !ok {
			fmt.Fprintf(stderr, "nfrouter: unknown command %q (see --help)\n", args[0])
			return exitUsage
		}
		return cmd.run(ctx, args[1:], stdout, stderr)
	}
	o, err := parseOptions(args)
	if code, done := flagsDone("nfrouter", err, stdout, stderr); done {
		return code
	}
	if o.version {
		fmt.Fprintln(stdout, "nfrouter", version)
		return exitOK
	}
	if o.cleanupConfig {
		// kube-router's spelling of `nfrouter cleanup`.
		return runCleanup(ctx, []string{"--service-node-port-range", o.proxy.nodePortRange}, stdout, stderr)
	}
	log := newLogger(stderr, o.logFormat, o.verbosity)
	if len(o.ignoredFlags) > 0 {
		log.Warn("Ignoring kube-router flags that mean nothing to nfrouter (see the README's table)", "flags", o.ignoredFlags)
	}
	if err := agent(ctx, o, stdout, log); err != nil {
		log.Error("nfrouter failed", "error", err)
		return exitFailure
	}
	return exitOK
}

// agent wires the model, the source of objects, the backends and the servers,
// and runs until ctx is done (or one sync, with --once).
func agent(ctx context.Context, o *options, stdout io.Writer, log *slog.Logger) error {
	nodeName, err := resolveNodeName(o.hostnameOverride)
	if err != nil {
		return err
	}
	log = log.With("node", nodeName)
	log.Info("Starting nfrouter", "version", version, "once", o.once, "dryRun", o.dryRun)
	applyForbidExec(o.node, log)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newBuildInfo())
	metrics := watch.NewMetrics(reg)

	w := wiring{o: o, nodeName: nodeName, log: log}
	var client kubernetes.Interface
	var objectEvents record.EventRecorder // nil with manifests: no API server to tell
	if o.manifests == "" {
		if client, err = newClient(o); err != nil {
			return err
		}
		events := newEventRecorder(ctx, client, nodeName)
		w.events, objectEvents = events, events.recorder
	}
	if o.runServiceProxy {
		mode, why := proxyMode(o.proxy.mode, ipvs.Available)
		log.Info("Service proxy mode chosen", "requested", o.proxy.mode, "mode", mode, "why", why)
		w.proxyMode = mode
	}
	store := model.NewStore(nil)
	if o.dryRun {
		feeder := watch.NewFeeder(store, nil, log, metrics, objectEvents)
		if err := loadObjects(ctx, o, client, feeder, log); err != nil {
			return err
		}
		state, _ := store.Snapshot()
		// All of the table the flags ask for, recording no events (and,
		// without w.reg, registering no metrics).
		w.events = nil
		parts := w.nftParts()
		return nft.Render(ctx, stdout, state, func(t *ruleset.Table) ([]nft.Part, error) { return makeParts(t, parts) })
	}

	w.reg = reg
	health := watch.NewHealth(clock.RealClock{}, o.syncPeriod)
	if !o.once {
		w.health = health
	}
	backends, err := newBackends(w)
	if err != nil {
		return err
	}
	defer backends.close(log)
	runner := watch.NewRunner(watch.RunnerConfig{
		Store:       store,
		Backends:    backends.list,
		MinInterval: o.minSyncInterval,
		Period:      o.syncPeriod,
		Log:         log,
		Metrics:     metrics,
		Health:      health,
		// The first sync leaves the cold start's garbage (the initial
		// lists, the first transaction's batches): collecting it now, with
		// nothing waiting, returns it to the OS and spares a change the
		// collection later.
		AfterInitialSync: func() { releaseColdStartMemory(log) },
	})
	feeder := watch.NewFeeder(store, runner.Notify, log, metrics, objectEvents)

	if !o.once {
		if o.metricsPort != 0 {
			if err := serveMetrics(ctx, o.metricsAddr, o.metricsPort, o.metricsPath, reg, o.enablePprof, log); err != nil {
				return err
			}
		}
		if o.healthPort != 0 {
			if err := serveHealth(ctx, o.healthAddr, o.healthPort, health, log); err != nil {
				return err
			}
		}
		if w.proxyMode != "" && o.proxy.healthzBindAddress != "" {
			// kube-proxy's health port is a convenience, not nfrouter's
			// own liveness (--health-port): a busy port is not fatal.
			if err := serveProxyHealthz(ctx, o.proxy.healthzBindAddress, health, log); err != nil {
				log.Warn("Not serving kube-proxy's /healthz and /livez", "error", err)
			}
		}
	}

	if err := loadObjects(ctx, o, client, feeder, log); err != nil {
		return err
	}
	if o.once {
		start := time.Now()
		if err := runner.SyncOnce(ctx); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		log.Info("Synced once", "backends", len(backends.list), "duration", time.Since(start).Round(time.Microsecond))
		return nil
	}
	err = runner.Run(ctx)
	log.Info("Stopped", "reason", context.Cause(ctx))
	return err
}

func newClient(o *options) (kubernetes.Interface, error) {
	cfg, err := clientConfig(o.master, o.kubeconfig, rest.InClusterConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	cfg.UserAgent = "nfrouter/" + version
	cfg.DisableCompression = o.disableCompression
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}

// loadObjects fills the model from manifests, or from the API server's
// informers, which keep feeding it until ctx is done.
func loadObjects(ctx context.Context, o *options, client kubernetes.Interface, f *watch.Feeder, log *slog.Logger) error {
	if o.manifests == "" {
		return watch.StartInformers(ctx, client, f, o.cacheSyncTimeout, log)
	}
	start := time.Now()
	n, errs := watch.LoadManifests(o.manifests, f)
	for _, err := range errs {
		log.Error("Invalid manifest object", "error", err)
	}
	log.Info("Loaded manifests", "path", o.manifests, "objects", n, "invalid", len(errs),
		"duration", time.Since(start).Round(time.Microsecond))
	return nil
}

// resolveNodeName applies kube-router's order: the flag, $NODE_NAME, the host
// name.
func resolveNodeName(override string) (string, error) {
	if override != "" {
		return override, nil
	}
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n, nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("node name: set --hostname-override or NODE_NAME: %w", err)
	}
	return h, nil
}

// releaseColdStartMemory runs a collection and returns the freed memory to
// the OS, logging what the heap holds afterwards.
func releaseColdStartMemory(log *slog.Logger) {
	start := time.Now()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	log.Info("Released the cold start's memory", "heapInUseMiB", m.HeapInuse>>20, "duration", time.Since(start).Round(time.Millisecond))
}
