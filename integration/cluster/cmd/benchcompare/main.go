// Command benchcompare is `make bench-compare`: the whole service proxy
// measured from outside, nfrouter with deploy/'s settings beside kube-proxy
// in nftables mode, against one real API server holding N ClusterIP services
// of E endpoints each. Each implementation runs alone, in a fresh node
// namespace of its own, one after another, so that they do not share the
// machine's cores. Per run it measures:
//
//   - cold start: from exec until a TCP connection from a pod to a ClusterIP
//     is answered by the pod behind it;
//   - change latency: from sending an EndpointSlice update until the kernel
//     commits the nftables generation carrying the new endpoint (read from
//     the nftables netlink multicast group);
//   - CPU per change, RSS after cold start and peak, from /proc;
//   - processes started (strace).
//
// A second scenario, the field report's (-scenarios churn), sets nfrouter's
// NetworkPolicy firewall beside kube-router's (v2.1.0, firewall only, built
// from integration/cluster/tools/kuberouter): web pods behind a policy
// replaced one at a time, measuring CPU seconds (children included) and
// processes started per pod replacement.
//
// It prints a Markdown table, writes results.json and, with the plot tool
// (integration/cluster/tools/plot, a module of its own), PNG plots. Root only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nfrouter/nfrouter/integration/cluster"
)

func main() {
	var o options
	flag.StringVar(&o.cache, "cache", "", "directory caching the Kubernetes binaries (the Makefile's CACHE_DIR/cluster)")
	flag.StringVar(&o.nfrouter, "nfrouter", "bin/nfrouter", "nfrouter binary")
	flag.StringVar(&o.repo, "repo", ".", "repository root (holds deploy/ and integration/cluster/tools)")
	flag.StringVar(&o.sizes, "sizes", "1000,10000", "numbers of ClusterIP services, comma-separated, ascending")
	flag.BoolVar(&o.large, "large", false, "add 50000 services to -sizes (long: ~20 min more on 2 cores)")
	flag.IntVar(&o.endpoints, "endpoints", 10, "endpoints per service")
	flag.IntVar(&o.changes, "changes", 100, "endpoint changes measured per run")
	flag.DurationVar(&o.gap, "gap", 1100*time.Millisecond, "pause after each committed change (kube-proxy's default --min-sync-period is 1 s)")
	flag.StringVar(&o.impls, "impls", "nfrouter,nfrouter-nolimit,kube-proxy", "implementations to run: nfrouter (deploy/'s GOMEMLIMIT), nfrouter-nolimit, kube-proxy")
	flag.StringVar(&o.out, "out", "bench-results", "directory for results.json, the table and the plots")
	flag.BoolVar(&o.pprof, "pprof", false, "save nfrouter's heap (after cold start) and CPU (during changes, during the churn) profiles to -out")
	flag.StringVar(&o.scenarios, "scenarios", "services,churn", "scenarios to run: services (ClusterIPs against kube-proxy), churn (the field report's pod churn with a NetworkPolicy against kube-router)")
	flag.StringVar(&o.churnImpls, "churn-impls", "nfrouter,kube-router", "implementations in the churn scenario: nfrouter (deploy/'s settings), kube-router")
	flag.IntVar(&o.replacements, "replacements", 20, "pod replacements measured per implementation in the churn scenario")
	flag.IntVar(&o.replicas, "replicas", 100, "web pods in the churn scenario, all on its node (the field report: a headless service over ~100 churning pods)")
	flag.StringVar(&o.nfrouterEnv, "nfrouter-env", "", "extra environment of nfrouter's runs, comma-separated (e.g. GOMAXPROCS=1), for trials of settings deploy/ does not have")
	flag.BoolVar(&o.plots, "plots", true, "draw PNG plots with integration/cluster/tools/plot")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}

type options struct {
	cache, nfrouter, repo, sizes, impls, out string
	scenarios, churnImpls, nfrouterEnv       string
	large, pprof, plots                      bool
	endpoints, changes                       int
	replacements, replicas                   int
	gap                                      time.Duration
}

// Result is one implementation at one size.
type Result struct {
	Impl      string          `json:"impl"`
	Services  int             `json:"services"`
	Endpoints int             `json:"endpoints_per_service"`
	ColdStart time.Duration   `json:"cold_start_ns"`
	Latencies []time.Duration `json:"change_latencies_ns"`
	// Delivered are the same changes' latencies until the harness's own
	// watch received them from the API server: the API server's and etcd's
	// share, which the agent's informer cannot beat.
	Delivered    []time.Duration `json:"change_delivered_ns,omitempty"`
	Failed       int             `json:"changes_not_seen"`
	CPUPerChange float64         `json:"cpu_seconds_per_change"`
	RSSCold      int64           `json:"rss_after_cold_start_bytes"`
	RSSPeak      int64           `json:"rss_peak_bytes"`
	Processes    int             `json:"processes_started"`
	Error        string          `json:"error,omitempty"`
	Load         string          `json:"loadavg"`
	// MemLimit is the GOMEMLIMIT nfrouter ran with: deploy/'s, scaled up
	// beyond the cluster size deploy/ is sized for.
	MemLimit string `json:"gomemlimit,omitempty"`
}

// AgentLatencies are the changes' latencies from the API server's delivery
// of the event to the kernel's commit: the agent's share.
func (r Result) AgentLatencies() []time.Duration {
	if len(r.Delivered) != len(r.Latencies) {
		return nil // a run from before Delivered was measured
	}
	out := make([]time.Duration, len(r.Latencies))
	for i, l := range r.Latencies {
		out[i] = l - r.Delivered[i]
	}
	return out
}

// Report is what results.json holds.
type Report struct {
	Machine string        `json:"machine"`
	Command string        `json:"command"`
	Started string        `json:"started"`
	Results []Result      `json:"results"`
	Churn   []ChurnResult `json:"churn,omitempty"`
	// NFRouterEnv is -nfrouter-env: settings beyond deploy/'s.
	NFRouterEnv string `json:"nfrouter_env,omitempty"`
}

// peerBinaries are the other implementations' programs.
type peerBinaries struct {
	cluster.Binaries
	KubeRouter string
}

func run(o options) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces, nftables)")
	}
	if o.cache == "" {
		return errors.New("-cache is required")
	}
	sizes, err := parseSizes(o.sizes, o.large)
	if err != nil {
		return err
	}
	scenarios, err := oneOf("-scenarios", o.scenarios, "services", "churn")
	if err != nil {
		return err
	}
	var impls, churnImpls []string
	if slices.Contains(scenarios, "services") {
		if impls, err = oneOf("-impls", o.impls, "nfrouter", "nfrouter-nolimit", "kube-proxy"); err != nil {
			return err
		}
	}
	if slices.Contains(scenarios, "churn") {
		if churnImpls, err = oneOf("-churn-impls", o.churnImpls, "nfrouter", "kube-router"); err != nil {
			return err
		}
		if o.replacements <= 0 || o.replicas <= 0 {
			return errors.New("-replacements and -replicas must be positive")
		}
	}
	memLimit, err := deployMemLimit(filepath.Join(o.repo, "deploy", "daemonset.yaml"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	phase("Kubernetes binaries (cached in %s)", o.cache)
	toolsDir := filepath.Join(o.repo, "integration/cluster/tools")
	bins, err := cluster.EnsureBinaries(ctx, toolsDir, o.cache, os.Stdout, log)
	if err != nil {
		return err
	}
	peers := peerBinaries{Binaries: bins}
	if slices.Contains(churnImpls, "kube-router") {
		phase("kube-router (cached in %s)", o.cache)
		if peers.KubeRouter, err = cluster.EnsureKubeRouter(ctx, toolsDir, o.cache, os.Stdout, log); err != nil {
			return err
		}
	}
	svcNodes := len(sizes) * len(impls)
	nodes := svcNodes + len(churnImpls)
	phase("starting the test bed: API server, %d node namespaces (a fresh one per run)", nodes)
	bed, err := cluster.Start(ctx, cluster.Config{Binaries: bins, NFRouter: o.nfrouter, DeployDir: filepath.Join(o.repo, "deploy"),
		Nodes: nodes, Progress: os.Stdout, Log: log})
	if err != nil {
		return err
	}
	defer func() {
		phase("cleaning up")
		if err := bed.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "cleanup:", err)
		}
	}()
	if err := bed.ApplyRBAC(ctx, nil); err != nil {
		return err
	}
	rep := Report{Machine: machine(), Command: makeCommand(), Started: time.Now().UTC().Format(time.RFC3339), NFRouterEnv: o.nfrouterEnv}
	// The churn first, while the API server holds only its objects.
	for i, im := range churnImpls {
		n := bed.Nodes[svcNodes+i]
		phase("field report churn: %s on %s, %d web pods, %d replacements (load %s)", im, n.Name, o.replicas, o.replacements, loadavg())
		res := measureChurn(ctx, o, bed, peers, n, im, memLimit)
		if res.Error != "" {
			fmt.Printf("  FAILED: %s\n", res.Error)
		}
		rep.Churn = append(rep.Churn, res)
		if err := writeJSON(filepath.Join(o.out, "results.json"), rep); err != nil {
			return err
		}
	}
	if err := services(ctx, o, bed, peers, sizes, impls, memLimit, &rep); err != nil {
		return err
	}
	table := markdown(rep, memLimit)
	fmt.Println()
	fmt.Print(table)
	if err := os.WriteFile(filepath.Join(o.out, "results.md"), []byte(table), 0o644); err != nil {
		return err
	}
	if o.plots {
		phase("drawing plots into %s", o.out)
		if err := drawPlots(o); err != nil {
			return err
		}
	}
	return nil
}

// services is the services scenario: per size, the services are created,
// then each implementation runs on a fresh node of its own.
func services(ctx context.Context, o options, bed *cluster.Bed, peers peerBinaries, sizes []int, impls []string, memLimit string, rep *Report) error {
	if len(impls) == 0 {
		return nil
	}
	cfg := bed.RESTConfig()
	cfg.QPS = -1 // no client-side limit: the bulk creation is the API server's business
	fast, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	scale, err := bed.NewScaleServices(ctx, fast, "bench")
	if err != nil {
		return err
	}
	// Per node a server pod, a client pod and a service pointing at the
	// server: the cold start ends when the client gets the server's answer.
	probes := make([]probe, len(sizes)*len(impls))
	phase("pods and probe services on %d nodes", len(probes))
	for i, n := range bed.Nodes[:len(probes)] {
		srv, err := bed.StartPod(ctx, cluster.PodSpec{Namespace: "bench", Name: "server-" + n.Name, Node: n.Name,
			Labels: map[string]string{"app": "server"}, Ports: cluster.WebPorts[:1]})
		if err != nil {
			return err
		}
		cl, err := bed.StartPod(ctx, cluster.PodSpec{Namespace: "bench", Name: "client-" + n.Name, Node: n.Name,
			Labels: map[string]string{"app": "client"}})
		if err != nil {
			return err
		}
		vip, port, err := scale.PointAt(ctx, "probe-"+n.Name, srv, cluster.WebPorts[0].ContainerPort)
		if err != nil {
			return err
		}
		probes[i] = probe{node: n, client: cl, vip: vip, port: port}
	}
	next := 0
	for _, size := range sizes {
		phase("creating services up to %d × %d endpoints", size, o.endpoints)
		begin := time.Now()
		if err := scale.Grow(ctx, size, o.endpoints, 32, func(done int) {
			fmt.Printf("  %d services (%s)\n", done, time.Since(begin).Round(time.Second))
		}); err != nil {
			return err
		}
		fmt.Printf("  %d services in %s\n", size, time.Since(begin).Round(time.Second))
		for _, im := range impls {
			p := probes[next]
			next++
			phase("%d services: %s on %s (load %s)", size, im, p.node.Name, loadavg())
			limit := memLimit
			if im == "nfrouter" {
				limit = scaledMemLimit(memLimit, size*o.endpoints)
			}
			res := measure(ctx, o, bed, peers, scale, p, im, size, limit)
			if res.Error != "" {
				fmt.Printf("  FAILED: %s\n", res.Error)
			}
			rep.Results = append(rep.Results, res)
			if err := writeJSON(filepath.Join(o.out, "results.json"), rep); err != nil {
				return err
			}
		}
	}
	return nil
}

type probe struct {
	node   *cluster.Node
	client *cluster.Pod
	vip    netip.Addr
	port   int
}

// agent is a running implementation, as the harness sees it.
type agent struct {
	pid   func() int
	execs func() (int, error)
	exits <-chan struct{}
	log   string
	stop  func()
	nfr   *cluster.NFRouter
}

func start(ctx context.Context, o options, bed *cluster.Bed, peers peerBinaries, n *cluster.Node, im, memLimit string) (*agent, error) {
	switch im {
	case "kube-proxy", "kube-router":
		var k *cluster.Peer
		var err error
		if im == "kube-proxy" {
			k, err = bed.StartKubeProxy(ctx, n, peers.KubeProxy, "nftables")
		} else {
			k, err = bed.StartKubeRouter(ctx, n, peers.KubeRouter)
		}
		if err != nil {
			return nil, err
		}
		return &agent{pid: k.Pid, execs: k.Execs, exits: k.Exited(), log: k.Log(), stop: k.Stop}, nil
	}
	env := []string{"GOMEMLIMIT=off"}
	if im == "nfrouter" {
		env[0] = "GOMEMLIMIT=" + memLimit
	}
	if o.nfrouterEnv != "" {
		env = append(env, strings.Split(o.nfrouterEnv, ",")...)
	}
	bed.SetNFRouterEnv(env...)
	// deploy/'s ConfigMap: firewall and service proxy on, no BGP router.
	args := []string{"--run-router=false", "--run-firewall=true", "--min-sync-interval=100ms", "--sync-period=5m"}
	if o.pprof {
		args = append(args, "--enable-pprof")
	}
	r, err := bed.StartNFRouter(ctx, n, args...)
	if err != nil {
		return nil, err
	}
	return &agent{pid: r.Pid, exits: r.Exited(), log: r.Log(), stop: func() { r.Stop() }, nfr: r,
		execs: func() (int, error) { n, _, err := r.Execs(); return n, err }}, nil
}

func measure(ctx context.Context, o options, bed *cluster.Bed, peers peerBinaries, scale *cluster.ScaleServices,
	p probe, im string, size int, memLimit string) Result {
	res := Result{Impl: im, Services: size, Endpoints: o.endpoints, Load: loadavg()}
	if im == "nfrouter" {
		res.MemLimit = memLimit
	}
	fail := func(err error) Result { res.Error = err.Error(); return res }
	begin := time.Now()
	a, err := start(ctx, o, bed, peers, p.node, im, memLimit)
	if err != nil {
		return fail(err)
	}
	defer a.stopAndKeepLog(filepath.Join(o.out, fmt.Sprintf("%s-%d.log", im, size)))
	for {
		answer, err := p.client.Ask("tcp", p.vip, p.port, 100*time.Millisecond)
		if err != nil {
			return fail(err)
		}
		if answer != "" {
			break
		}
		select {
		case <-a.exits:
			return fail(fmt.Errorf("%s exited during cold start; see %s", im, a.log))
		default:
		}
		if time.Since(begin) > 15*time.Minute {
			return fail(fmt.Errorf("%s: no answer from %s:%d after 15 min; see %s", im, p.vip, p.port, a.log))
		}
	}
	res.ColdStart = time.Since(begin)
	cold, err := cluster.ReadProcStat(a.pid())
	if err != nil {
		return fail(err)
	}
	res.RSSCold = cold.RSS
	fmt.Printf("  cold start %s, RSS %s\n", res.ColdStart.Round(time.Millisecond), mib(cold.RSS))
	tag := fmt.Sprintf("%s-%d", im, size)
	if o.pprof && a.nfr != nil {
		if err := a.nfr.Fetch(ctx, "/debug/pprof/heap", filepath.Join(o.out, "heap-"+tag+".pb.gz")); err != nil {
			fmt.Println("  heap profile:", err)
		}
	}
	w, err := cluster.WatchGenerations(p.node.NS)
	if err != nil {
		return fail(err)
	}
	defer w.Close()
	// The changes are measured from a standing start: the syncs that follow
	// the first one (kube-proxy's) and the collection of the cold start's
	// garbage belong to the cold start, not to the first changes.
	before, settled, err := settle(a.pid, 2*time.Second, time.Minute)
	if err != nil {
		return fail(err)
	}
	fmt.Printf("  settled after %s\n", settled.Round(100*time.Millisecond))
	profDone := make(chan struct{})
	if o.pprof && a.nfr != nil {
		secs := int((time.Duration(o.changes) * (o.gap + 50*time.Millisecond)).Seconds())
		go func() {
			defer close(profDone)
			if err := a.nfr.Fetch(ctx, "/debug/pprof/profile?seconds="+strconv.Itoa(max(secs, 1)), filepath.Join(o.out, "cpu-"+tag+".pb.gz")); err != nil {
				fmt.Println("  CPU profile:", err)
			}
		}()
	} else {
		close(profDone)
	}
	events, err := scale.WatchChanges(ctx)
	if err != nil {
		return fail(err)
	}
	defer events.Close()
	for c := range o.changes {
		i := (c*7919 + 13) % size
		var wait func(context.Context, time.Duration) (time.Time, error)
		var sent time.Time
		_, rv, err := scale.Change(ctx, i, func(a netip.Addr) { wait = w.Expect(a); sent = time.Now() })
		if err != nil {
			return fail(err)
		}
		at, err := wait(ctx, 60*time.Second)
		if err != nil {
			fmt.Printf("  change %d: %v\n", c+1, err)
			res.Failed++
			continue
		}
		res.Latencies = append(res.Latencies, at.Sub(sent))
		// By the commit the harness's watch has long had the event.
		delivered, err := events.Arrived(rv)
		if err != nil {
			return fail(err)
		}
		res.Delivered = append(res.Delivered, delivered.Sub(sent))
		time.Sleep(o.gap)
	}
	after, err := cluster.ReadProcStat(a.pid())
	if err != nil {
		return fail(err)
	}
	<-profDone
	res.CPUPerChange = (after.CPUSeconds - before.CPUSeconds) / float64(o.changes)
	res.RSSPeak = after.PeakRSS
	if res.Processes, err = a.execs(); err != nil {
		return fail(err)
	}
	q, d, ag := quantiles(res.Latencies), quantiles(res.Delivered), quantiles(res.AgentLatencies())
	fmt.Printf("  %d changes: p50 %s p90 %s p99 %s max %s (delivered p50 %s p99 %s; agent p50 %s p99 %s); CPU %.1f ms per change; peak RSS %s; %d processes\n",
		len(res.Latencies), q[0], q[1], q[2], q[3], d[0], d[2], ag[0], ag[2], res.CPUPerChange*1000, mib(res.RSSPeak), res.Processes)
	return res
}

// quantiles are p50, p90, p99 and max.
func quantiles(ds []time.Duration) [4]time.Duration {
	var q [4]time.Duration
	if len(ds) == 0 {
		return q
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration {
		i := int(p*float64(len(s)) + 0.999999) // nearest rank
		return s[min(max(i-1, 0), len(s)-1)]
	}
	for i, p := range []float64{0.5, 0.9, 0.99, 1} {
		q[i] = roundDur(at(p))
	}
	return q
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	default:
		return d.Round(10 * time.Microsecond)
	}
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func phase(format string, args ...any) {
	fmt.Printf("\n[%s] ==> "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// oneOf splits a comma-separated flag value and checks every item is known.
func oneOf(flagName, value string, known ...string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(value, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(known, f) {
			return nil, fmt.Errorf("%s: unknown %q (known: %s)", flagName, f, strings.Join(known, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

func parseSizes(s string, large bool) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-sizes: bad size %q", f)
		}
		out = append(out, n)
	}
	if large && !slices.Contains(out, 50000) {
		out = append(out, 50000)
	}
	slices.Sort(out)
	return out, nil
}

// deployMemLimit reads the GOMEMLIMIT deploy/'s DaemonSet sets, so that the
// benchmark runs what users get.
func deployMemLimit(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`name: GOMEMLIMIT, value: "([^"]+)"`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s sets no GOMEMLIMIT", path)
	}
	return string(m[1]), nil
}

// deploySizedFor is the number of endpoints deploy/'s GOMEMLIMIT and memory
// limit are sized for (its comment: 10,000 services × 10 endpoints).
const deploySizedFor = 100_000

// scaledMemLimit is deploy/'s GOMEMLIMIT for a cluster of endpoints: as it
// is up to the size it is made for, in proportion beyond, as deploy/'s
// comment tells users to scale it.
func scaledMemLimit(deploy string, endpoints int) string {
	if endpoints <= deploySizedFor {
		return deploy
	}
	mib, err := strconv.Atoi(strings.TrimSuffix(deploy, "MiB"))
	if err != nil || !strings.HasSuffix(deploy, "MiB") {
		return deploy // a form this scaling does not read: as it is
	}
	return strconv.Itoa((mib*endpoints+deploySizedFor-1)/deploySizedFor) + "MiB"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// machine describes the CPU, core count and kernel.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`).FindSubmatch(b); m != nil {
			model = string(m[1])
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	var mem string
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if m := regexp.MustCompile(`MemTotal:\s*(\d+) kB`).FindSubmatch(b); m != nil {
			kb, _ := strconv.Atoi(string(m[1]))
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	cores := 0
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		cores = strings.Count(string(b), "\nprocessor") + 1
	}
	return fmt.Sprintf("%d × %s%s, Linux %s", cores, model, mem, strings.TrimSpace(string(kernel)))
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// drawPlots runs the plot tool, a module of its own so that its plotting
// library never becomes a dependency of nfrouter's module.
func drawPlots(o options) error {
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "run", ".", "-in", filepath.Join(out, "results.json"), "-out", out)
	cmd.Dir = filepath.Join(o.repo, "integration/cluster/tools/plot")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	return nil
}

// makeCommand is the make command that repeats this run: the flags given,
// without the ones naming this machine's files (cache, binary, output).
func makeCommand() string {
	var set []string
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "cache", "nfrouter", "repo", "out":
		default:
			set = append(set, "-"+f.Name+"="+f.Value.String())
		}
	})
	if len(set) == 0 {
		return "make bench-compare"
	}
	return fmt.Sprintf("make bench-compare BENCH_COMPARE_FLAGS=%q", strings.Join(set, " "))
}

// settle waits until the process has used under 1% of a core for a whole
// second, after at least min and at most max, and returns its counters then
// and how long it took.
func settle(pid func() int, min, max time.Duration) (cluster.ProcStat, time.Duration, error) {
	begin := time.Now()
	last, err := cluster.ReadProcStat(pid())
	if err != nil {
		return last, 0, err
	}
	for {
		time.Sleep(time.Second)
		now, err := cluster.ReadProcStat(pid())
		if err != nil {
			return now, 0, err
		}
		quiet := now.CPUSeconds-last.CPUSeconds < 0.01
		last = now
		if took := time.Since(begin); took >= max || (quiet && took >= min) {
			return now, took, nil
		}
	}
}

// stopAndKeepLog stops the agent and copies its log (its start-up and sync
// timings) next to the results; the test bed's copy goes with the bed.
func (a *agent) stopAndKeepLog(path string) {
	a.stop()
	b, err := os.ReadFile(a.log)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		fmt.Println("  keeping the log:", err)
	}
}
