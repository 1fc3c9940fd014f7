package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/integration/cluster"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Environment the Makefile's test-cluster target sets. Without a cache
// directory the tier skips: it is never given a machine path by default.
const (
	envCache    = "NFROUTER_CLUSTER_CACHE"
	envNFRouter = "NFROUTER_BIN"
)

var (
	nfrouterOnce sync.Once
	nfrouterBin  string
	nfrouterErr  error
)

// startBed starts a bed with nodes nodes and deploy/'s RBAC, closed when the
// test ends. On failure the control-plane and nfrouter logs are printed.
func startBed(t *testing.T, nodes int) *cluster.Bed {
	t.Helper()
	kerneltest.RequireRoot(t)
	cache := os.Getenv(envCache)
	if cache == "" {
		t.Skipf("cluster tier: %s is not set; run make test-cluster (as root), which builds and caches kube-apiserver and etcd", envCache)
	}
	ctx := t.Context()
	bins, err := cluster.EnsureBinaries(ctx, "tools", cache, testWriter{t}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	bed, err := cluster.Start(ctx, cluster.Config{
		Binaries: bins, NFRouter: nfrouter(t), DeployDir: "../../deploy", Nodes: nodes,
		Progress: testWriter{t}, Log: slog.Default(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("test bed started in %s", bed.Started.Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(t, bed.Dir())
		}
		if err := bed.Close(); err != nil {
			t.Errorf("close bed: %v", err)
		}
	})
	if err := bed.ApplyRBAC(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return bed
}

// nfrouter is $NFROUTER_BIN or a fresh build of cmd/nfrouter.
func nfrouter(t *testing.T) string {
	if p := os.Getenv(envNFRouter); p != "" {
		return p
	}
	nfrouterOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nfrouter-bin-")
		if err != nil {
			nfrouterErr = err
			return
		}
		nfrouterBin = filepath.Join(dir, "nfrouter")
		out, err := exec.Command("go", "build", "-o", nfrouterBin, "../../cmd/nfrouter").CombinedOutput()
		if err != nil {
			nfrouterErr = fmt.Errorf("build nfrouter: %w\n%s", err, out)
		}
	})
	if nfrouterErr != nil {
		t.Fatal(nfrouterErr)
	}
	return nfrouterBin
}

// startRouters runs nfrouter on every node and waits until each is healthy
// and the nodes have learned each other's pod routes.
func startRouters(t *testing.T, bed *cluster.Bed, extra ...string) []*cluster.NFRouter {
	t.Helper()
	var rs []*cluster.NFRouter
	for _, n := range bed.Nodes {
		r, err := bed.StartNFRouter(t.Context(), n, extra...)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		if err := r.WaitHealthy(t.Context(), 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := bed.WaitPodRoutes(t.Context(), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod routes learned over BGP %s after every nfrouter was healthy", time.Since(start).Round(time.Millisecond))
	return rs
}

func dumpLogs(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		t.Logf("--- %s (last %d lines)\n%s", filepath.Base(f), len(lines), strings.Join(lines, "\n"))
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
