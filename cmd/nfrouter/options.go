package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// options are the command-line flags. Names follow kube-router's where the
// meaning is the same, so that a kube-router DaemonSet's arguments carry over.
type options struct {
	kubeconfig         string
	master             string
	disableCompression bool
	manifests          string
	hostnameOverride   string

	runFirewall     bool
	runServiceProxy bool
	runRouter       bool

	netpolDefaultDeny     bool
	netpolKeepEstablished bool
	dryRun                bool

	proxy  proxyOptions
	router routerOptions
	node   nodeOptions

	cacheSyncTimeout time.Duration
	syncPeriod       time.Duration
	minSyncInterval  time.Duration

	metricsAddr string
	metricsPort uint16
	metricsPath string
	healthAddr  string
	healthPort  uint16
	enablePprof bool

	// cleanupConfig is kube-router's spelling of `nfrouter cleanup`.
	cleanupConfig bool
	// ignoredFlags are the kube-router flags given that mean nothing here,
	// for one warning at start.
	ignoredFlags []string

	verbosity int
	logFormat string
	once      bool
	version   bool
}

// helpRequested is returned by parseOptions for --help; it carries the usage.
type helpRequested struct{ usage string }

func (h *helpRequested) Error() string { return "help requested" }

// parseOptions parses and validates args. Errors are one line naming the flag.
func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := pflag.NewFlagSet("nfrouter", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false

	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig file; in-cluster configuration when neither this nor --master is given.")
	fs.StringVar(&o.master, "master", "", "Address of the Kubernetes API server (overrides the kubeconfig's; in a pod without --kubeconfig, the in-cluster address, keeping the service account's credentials).")
	fs.BoolVar(&o.disableCompression, "disable-compression", true, "Ask the API server for uncompressed responses (kubectl's flag): on a cluster network, gzip on every watch event costs the API server and each node CPU for little; set false for an API server across a slow link.")
	fs.StringVar(&o.manifests, "manifests", "", "Read objects from this YAML/JSON file or directory instead of an API server.")
	fs.StringVar(&o.hostnameOverride, "hostname-override", "", "This node's name; defaults to $NODE_NAME, then the host name.")

	fs.BoolVar(&o.runFirewall, "run-firewall", true, "Enforce NetworkPolicies.")
	fs.BoolVar(&o.runServiceProxy, "run-service-proxy", true, "Proxy services.")
	fs.BoolVar(&o.runRouter, "run-router", true, "Route pod networks with BGP.")

	fs.BoolVar(&o.netpolDefaultDeny, "netpol-default-deny", false, "Deny traffic of local pods until the firewall has programmed them.")
	fs.BoolVar(&o.netpolKeepEstablished, "netpol-keep-established", false, "Let connections a policy starts denying run until they end, as kube-router does, instead of deleting their conntrack entries.")
	fs.BoolVar(&o.dryRun, "dry-run", false, "Print the nftables table that would be programmed (firewall, service proxy NAT, pod egress), in nft syntax, and exit without touching the kernel.")

	o.proxy.addFlags(fs)
	o.router.addFlags(fs)
	o.node.addFlags(fs)

	fs.DurationVar(&o.cacheSyncTimeout, "cache-sync-timeout", time.Minute, "How long to wait for the informer caches to sync at start.")
	fs.DurationVar(&o.syncPeriod, "sync-period", 5*time.Minute, "Interval of full syncs that read back the kernel state and repair drift.")
	fs.DurationVar(&o.minSyncInterval, "min-sync-interval", 100*time.Millisecond, "Least time between two syncs; changes arriving sooner are coalesced.")

	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "Address to serve Prometheus metrics on (all addresses when empty).")
	fs.Uint16Var(&o.metricsPort, "metrics-port", 0, "Port to serve Prometheus metrics on; 0 disables.")
	fs.StringVar(&o.metricsPath, "metrics-path", "/metrics", "Path of the metrics endpoint.")
	fs.StringVar(&o.healthAddr, "health-addr", "", "Address to serve /healthz on (all addresses when empty).")
	fs.Uint16Var(&o.healthPort, "health-port", 20244, "Port to serve /healthz on; 0 disables.")
	fs.BoolVar(&o.enablePprof, "enable-pprof", false, "Serve Go's profiles at /debug/pprof/ on the metrics listener.")
	fs.BoolVar(&o.cleanupConfig, "cleanup-config", false, "Remove what nfrouter programmed on this node and exit (as `nfrouter cleanup`).")

	fs.IntVarP(&o.verbosity, "v", "v", 0, "Log verbosity: 0 logs state changes, 1 and more add per-event detail.")
	fs.StringVar(&o.logFormat, "log-format", "", "Log format, text or json; text on a terminal, json otherwise.")
	fs.BoolVar(&o.once, "once", false, "Run one full sync, then exit: non-zero when it failed.")
	fs.BoolVarP(&o.version, "version", "V", false, "Print the version and exit.")
	addKubeRouterFlags(fs)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, &helpRequested{usage: "Usage of nfrouter [COMMAND] [flags]; without a command it runs the agent.\n\n" +
				commandUsage() + "\nFlags of the agent (kube-router's that nfrouter ignores or refuses are accepted too; see the README):\n" + fs.FlagUsages()}
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.applyKubeRouterAliases(fs)
	ignored, refused := checkKubeRouterFlags(fs)
	o.ignoredFlags = ignored
	if err := o.validate(); err != nil || len(refused) > 0 {
		if err != nil {
			refused = append(refused, err.Error())
		}
		return nil, errors.New(strings.Join(refused, "; "))
	}
	return o, nil
}

// applyKubeRouterAliases gives kube-router's flags whose meaning depends on
// whether they were given their effect.
func (o *options) applyKubeRouterAliases(fs *pflag.FlagSet) {
	if fs.Changed("ipvs-graceful-termination") && !o.proxy.gracefulTermination {
		o.proxy.gracePeriod = 0
	}
	if fs.Changed("injected-routes-sync-period") {
		o.router.routesSyncPeriod = o.router.injectedRoutesSyncPeriod
	}
}

func (o *options) validate() error {
	var errs []string
	if o.manifests != "" && (o.kubeconfig != "" || o.master != "") {
		errs = append(errs, "--manifests cannot be combined with --kubeconfig or --master")
	}
	switch o.logFormat {
	case "", "text", "json":
	default:
		errs = append(errs, fmt.Sprintf("--log-format must be text or json, not %q", o.logFormat))
	}
	if o.syncPeriod <= 0 {
		errs = append(errs, fmt.Sprintf("--sync-period must be positive, not %s", o.syncPeriod))
	}
	if o.minSyncInterval < 0 || o.minSyncInterval > o.syncPeriod {
		errs = append(errs, fmt.Sprintf("--min-sync-interval must be between 0 and --sync-period, not %s", o.minSyncInterval))
	}
	if o.cacheSyncTimeout <= 0 {
		errs = append(errs, fmt.Sprintf("--cache-sync-timeout must be positive, not %s", o.cacheSyncTimeout))
	}
	if o.dryRun && !o.runFirewall && !o.runServiceProxy && !(o.runRouter && o.router.enablePodEgress) {
		errs = append(errs, "--dry-run prints the nftables table, which needs --run-firewall, --run-service-proxy or --enable-pod-egress")
	}
	if o.enablePprof && o.metricsPort == 0 {
		errs = append(errs, "--enable-pprof serves on the metrics listener: set --metrics-port")
	}
	if o.verbosity < 0 {
		errs = append(errs, fmt.Sprintf("-v must not be negative, not %d", o.verbosity))
	}
	errs = append(errs, o.proxy.validate()...)
	errs = append(errs, o.router.validate()...)
	errs = append(errs, o.node.validate()...)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
