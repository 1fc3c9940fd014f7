// Command e2e is `make e2e`: it builds (or takes from the cache) e2e.test and
// agnhost from k8s.io/kubernetes, the agnhost image with the shell userland
// under the exact reference `e2e.test --list-images` names, starts the node
// tier with nfrouter as the only network agent (or uses the cluster of
// -kubeconfig, whose nodes must already hold the images), runs the chosen
// suites and writes the results table (results.md in -out).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nfrouter/nfrouter/integration/cluster"
	"github.com/nfrouter/nfrouter/integration/e2e"
)

type options struct {
	repo, cache, out, kubeconfig, nfrouter string
	nfrouterRef                            string
	keep                                   bool
	suites                                 []string
	dnsIP                                  string
	nodes                                  int
	imagesOnly, fromReports                bool
}

func main() {
	var o options
	suites := flag.String("suites", "netpol,services", "comma-separated suites: "+strings.Join(e2e.SuiteNames(), ", "))
	flag.StringVar(&o.repo, "repo", ".", "repository root (holds deploy/ and integration/cluster/tools)")
	flag.StringVar(&o.cache, "cache", "", "cache directory (the Makefile's CACHE_DIR): binaries in cluster/, the shell userland in e2e/")
	flag.StringVar(&o.out, "out", "bin/e2e", "directory for the images, reports, logs and results.md")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "run against this cluster instead of starting the node tier (its nodes must hold the images)")
	flag.StringVar(&o.nfrouter, "nfrouter", "bin/nfrouter-image.tar", "nfrouter image archive for the node tier (make image)")
	flag.StringVar(&o.nfrouterRef, "nfrouter-ref", "nfrouter:dev", "the reference of nfrouter's image in -nfrouter")
	flag.BoolVar(&o.keep, "keep", false, "keep the node tier's work directory (logs, configs) after the run")
	flag.IntVar(&o.nodes, "nodes", 2, "nodes")
	flag.StringVar(&o.dnsIP, "dns-ip", "10.96.0.10", "the kubelets' clusterDNS: a CoreDNS Service is made there (empty: none)")
	flag.BoolVar(&o.imagesOnly, "images-only", false, "build the binaries and image archives, then stop")
	flag.BoolVar(&o.fromReports, "from-reports", false, "run nothing: write results.md from the suites' reports already in -out")
	flag.Parse()
	o.suites = strings.Split(*suites, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.cache == "" {
		return errors.New("-cache is required")
	}
	var suites []e2e.Suite
	for _, name := range o.suites {
		s, ok := e2e.Suites[name]
		if !ok {
			return fmt.Errorf("unknown suite %q (known: %s)", name, strings.Join(e2e.SuiteNames(), ", "))
		}
		if o.nodes < s.Nodes {
			return fmt.Errorf("suite %s needs at least %d nodes", name, s.Nodes)
		}
		suites = append(suites, s)
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	if o.fromReports {
		return resultsFromReports(out, o, suites)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	step := func(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

	step("e2e.test and agnhost (cached in %s)", filepath.Join(o.cache, "cluster"))
	begin := time.Now()
	bins, err := cluster.EnsureE2EBinaries(ctx, filepath.Join(o.repo, "integration/cluster/tools"),
		filepath.Join(o.cache, "cluster"), o.dnsIP != "", os.Stdout, log)
	if err != nil {
		return err
	}
	fmt.Printf("ready after %s: %s\n", time.Since(begin).Round(time.Second), bins.E2ETest)

	step("images")
	archives, err := buildImages(ctx, bins, filepath.Join(o.cache, "e2e"), filepath.Join(out, "images"), log)
	if err != nil {
		return err
	}
	if o.imagesOnly {
		return nil
	}

	kubeconfig := o.kubeconfig
	if kubeconfig == "" {
		step("starting %d nodes with nfrouter as the only network agent", o.nodes)
		nodes, err := startNodeTier(ctx, o, archives, log)
		if err != nil {
			return err
		}
		defer func() {
			step("stopping the nodes")
			if err := nodes.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "cleanup:", err)
			}
		}()
		kubeconfig = nodes.Kubeconfig()
	}
	if o.dnsIP != "" {
		step("cluster DNS at %s", o.dnsIP)
		if err := deployDNS(ctx, kubeconfig, o.dnsIP); err != nil {
			return err
		}
	}

	var runs []e2e.Run
	for _, s := range suites {
		step("suite %s: focus %s, skip %s", s.Name, s.Focus, s.Skip)
		dir := filepath.Join(out, s.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		logFile, err := os.Create(filepath.Join(dir, "e2e.log"))
		if err != nil {
			return err
		}
		r, err := e2e.RunSuite(ctx, bins.E2ETest, s, kubeconfig, o.nodes, dir, io.MultiWriter(logFile, progressWriter{}))
		logFile.Close()
		if err != nil {
			return err
		}
		n := e2e.Counts(r.Results)
		fmt.Printf("suite %s: %d passed, %d failed, %d skipped in %s (log %s)\n", s.Name, n[e2e.Passed], n[e2e.Failed],
			n[e2e.Skipped], r.Duration.Round(time.Second), filepath.Join(dir, "e2e.log"))
		runs = append(runs, r)
	}
	if err := writeResults(filepath.Join(out, "results.md"), o, runs); err != nil {
		return err
	}
	failed := 0
	for _, r := range runs {
		failed += e2e.Counts(r.Results)[e2e.Failed]
	}
	if failed > 0 {
		return fmt.Errorf("%d cases failed (results.md)", failed)
	}
	return nil
}

// buildImages writes the agnhost image archive under the reference
// e2e.test names (and CoreDNS's, when built) and returns the archives by
// reference.
func buildImages(ctx context.Context, bins cluster.E2EBinaries, cache, dir string, log *slog.Logger) (map[string]string, error) {
	refs, err := e2e.ListImages(ctx, bins.E2ETest)
	if err != nil {
		return nil, err
	}
	agnhostRef, err := e2e.ImageNamed(refs, "agnhost")
	if err != nil {
		return nil, err
	}
	userland, err := e2e.ShellUserland(ctx, cache, log)
	if err != nil {
		return nil, err
	}
	agnhost, err := os.ReadFile(bins.Agnhost)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	archives := map[string]string{}
	path := filepath.Join(dir, "agnhost.tar")
	if err := e2e.WriteImage(path, agnhostRef, e2e.AgnhostSpec(agnhost, userland)); err != nil {
		return nil, err
	}
	archives[agnhostRef] = path
	fmt.Printf("%s: %s (%d userland files)\n", agnhostRef, path, len(userland))
	if bins.CoreDNS == "" {
		return archives, nil
	}
	coredns, err := os.ReadFile(bins.CoreDNS)
	if err != nil {
		return nil, err
	}
	path = filepath.Join(dir, "coredns.tar")
	if err := e2e.WriteImage(path, e2e.CoreDNSImage, e2e.CoreDNSSpec(coredns)); err != nil {
		return nil, err
	}
	archives[e2e.CoreDNSImage] = path
	fmt.Printf("%s: %s\n", e2e.CoreDNSImage, path)
	return archives, nil
}

// progressWriter shows the lines of e2e.test's output that say how far it
// got (ginkgo's per-spec summary lines); the whole output goes to the log.
type progressWriter struct{}

func (progressWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(string(p), "\n") {
		if strings.HasPrefix(line, "•") || strings.HasPrefix(line, "Ran ") || strings.Contains(line, "[FAILED]") {
			fmt.Println(line)
		}
	}
	return len(p), nil
}

// resultsFromReports writes results.md from the JUnit reports of earlier
// runs (durations unknown: the reports' own case times are shown).
func resultsFromReports(out string, o options, suites []e2e.Suite) error {
	var runs []e2e.Run
	for _, s := range suites {
		focus, skip, err := s.Patterns()
		if err != nil {
			return err
		}
		f, err := os.Open(filepath.Join(out, s.Name, "junit_01.xml"))
		if err != nil {
			return err
		}
		results, err := e2e.ParseJUnit(f, focus, skip)
		f.Close()
		if err != nil {
			return err
		}
		var total time.Duration
		for _, r := range results {
			total += r.Duration
		}
		runs = append(runs, e2e.Run{Suite: s, Results: results, Duration: total})
	}
	return writeResults(filepath.Join(out, "results.md"), o, runs)
}

func deployDNS(ctx context.Context, kubeconfig, ip string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return e2e.NewDNSObjects(ip, e2e.CoreDNSImage).Apply(ctx, cs, 3*time.Minute)
}

func writeResults(path string, o options, runs []e2e.Run) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	fmt.Fprintf(f, "Command: `make e2e E2E_SUITES=%s E2E_NODES=%d`; machine: %d cores, kernel %s; %s.\n\n",
		strings.Join(o.suites, ","), o.nodes, runtime.NumCPU(), strings.TrimSpace(string(kernel)), time.Now().UTC().Format(time.DateOnly))
	for _, r := range runs {
		title := fmt.Sprintf("%s (%s, e2e.test exit: %v)", r.Suite.Name, r.Duration.Round(time.Second), exitText(r.ExitErr))
		if err := e2e.WriteTable(f, title, r.Results); err != nil {
			return err
		}
		fmt.Fprintln(f)
	}
	fmt.Printf("\nresults: %s\n", path)
	return f.Close()
}

func exitText(err error) string {
	if err == nil {
		return "0"
	}
	return err.Error()
}
