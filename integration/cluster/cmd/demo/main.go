// Command demo is `make demo`: it starts a two-node test bed (real etcd,
// kube-apiserver and kube-controller-manager; namespaces as nodes and pods),
// applies the field report's objects, runs nfrouter on both nodes, shows one
// node's ruleset, a probe matrix and what nfrouter did, churns pods, shows it
// again, and removes everything on exit (also on Ctrl-C). Root only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/nfrouter/nfrouter/integration/cluster"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/vishvananda/netns"
)

func main() {
	var (
		cache    = flag.String("cache", "", "directory caching the control-plane binaries (the Makefile's CACHE_DIR/cluster)")
		nfrouter = flag.String("nfrouter", "bin/nfrouter", "nfrouter binary")
		repo     = flag.String("repo", ".", "repository root (holds deploy/ and integration/cluster/tools)")
		replicas = flag.Int("replicas", 10, "web pods")
		churn    = flag.Duration("churn", 30*time.Second, "how long to replace pods one at a time")
	)
	flag.Parse()
	if err := run(*cache, *nfrouter, *repo, *replicas, *churn); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(cache, nfrouter, repo string, replicas int, churn time.Duration) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (network namespaces, nftables)")
	}
	if cache == "" {
		return fmt.Errorf("-cache is required")
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	step := func(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

	step("control-plane binaries (cached in %s)", cache)
	begin := time.Now()
	bins, err := cluster.EnsureBinaries(ctx, filepath.Join(repo, "integration/cluster/tools"), cache, os.Stdout, log)
	if err != nil {
		return err
	}
	step("starting a 2-node test bed")
	bed, err := cluster.Start(ctx, cluster.Config{Binaries: bins, NFRouter: nfrouter, DeployDir: filepath.Join(repo, "deploy"),
		Nodes: 2, Progress: os.Stdout, Log: log})
	if err != nil {
		return err
	}
	defer func() {
		step("cleaning up")
		if err := bed.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "cleanup:", err)
		}
	}()
	fmt.Printf("test bed up in %s (binaries ready after %s)\n", bed.Started.Round(time.Millisecond), (time.Since(begin) - bed.Started).Round(time.Second))
	if err := bed.ApplyRBAC(ctx, nil); err != nil {
		return err
	}

	step("applying the field report: namespace shop, %d web pods with 3 ports, frontend, batch pod, a ClusterIP service, policy web-from-frontend", replicas)
	fr, err := bed.SetupFieldReport(ctx, replicas)
	if err != nil {
		return err
	}
	step("starting nfrouter on both nodes (deploy/'s ServiceAccount token, under strace)")
	var routers []*cluster.NFRouter
	for _, n := range bed.Nodes {
		r, err := bed.StartNFRouter(ctx, n)
		if err != nil {
			return err
		}
		routers = append(routers, r)
	}
	for _, r := range routers {
		if err := r.WaitHealthy(ctx, time.Minute); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := bed.WaitPodRoutes(ctx, time.Minute); err != nil {
		return err
	}
	step("pod routes learned over BGP after %s", time.Since(start).Round(time.Millisecond))
	step("adding the headless service web-headless (3 ports) in front of the web pods")
	if err := fr.CreateHeadless(ctx, bed); err != nil {
		return err
	}
	res, err := cluster.WaitMatrix(ctx, fr.Cases(), 30*time.Second)
	if err != nil {
		fmt.Println(err)
	}
	step("nft list ruleset on %s", bed.Nodes[0].Name)
	if err := listRuleset(bed.Nodes[0].NS); err != nil {
		return err
	}
	step("probe matrix (ok = connected, -- = blocked, ! = not what the policy says)")
	fmt.Print(cluster.FormatMatrix(res))
	step("summary (from nfrouter's metrics endpoints)")
	if err := printSummaries(ctx, routers); err != nil {
		return err
	}

	before, err := summaries(ctx, routers)
	if err != nil {
		return err
	}
	step("churning: replacing web pods one at a time for %s (8 API writes each, as a ReplicaSet and kubelets would)", churn)
	// Stop between replacements, never in the middle of one.
	until := time.Now().Add(churn)
	n := 0
	err = fr.Churn(ctx, bed, 1<<30, func(int) error {
		if n++; time.Now().After(until) {
			return errChurnDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errChurnDone) {
		return err
	}
	fmt.Printf("%d pods replaced\n", n)
	res, err = cluster.WaitMatrix(ctx, fr.Cases(), 30*time.Second)
	if err != nil {
		fmt.Println(err)
	}
	step("probe matrix after churn")
	fmt.Print(cluster.FormatMatrix(res))
	step("summary after churn")
	after, err := summaries(ctx, routers)
	if err != nil {
		return err
	}
	for i := range after {
		fmt.Println(after[i])
	}
	step("what one pod replacement cost each node (the field report: kube-router spent ~1.1 CPU-seconds and 65 processes)")
	for i := range after {
		fmt.Println(after[i].Minus(before[i]).PerReplacement(n))
	}
	return nil
}

var errChurnDone = errors.New("churn done")

func printSummaries(ctx context.Context, routers []*cluster.NFRouter) error {
	sums, err := summaries(ctx, routers)
	for _, s := range sums {
		fmt.Println(s)
	}
	return err
}

func summaries(ctx context.Context, routers []*cluster.NFRouter) ([]cluster.Summary, error) {
	var out []cluster.Summary
	for _, r := range routers {
		s, err := r.Summary(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

// listRuleset runs nft in the node's namespace: the demo may start processes,
// nfrouter never does.
func listRuleset(ns netns.NsHandle) error {
	return kerneltest.Do(ns, func() error {
		cmd := exec.Command("nft", "list", "ruleset")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	})
}
