package cluster

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A tool's cache key changes with its test binaries, and a tool without any
// keeps the key it had before test binaries existed (its cached build stays
// valid).
func TestCacheKeyCoversTestPackages(t *testing.T) {
	kube := tools[1]
	if kube.dir != "kube" {
		t.Fatalf("tools[1] is %q, want kube", kube.dir)
	}
	base, _, err := kube.cacheKey("tools/kube")
	if err != nil {
		t.Fatal(err)
	}
	withEmpty := kube
	withEmpty.testPackages = map[string]string{}
	if k, _, _ := withEmpty.cacheKey("tools/kube"); k != base {
		t.Errorf("empty test packages changed the key: %s, want %s", k, base)
	}
	withTest := kube
	withTest.testPackages = map[string]string{"e2e.test": "k8s.io/kubernetes/test/e2e"}
	if k, _, _ := withTest.cacheKey("tools/kube"); k == base {
		t.Errorf("a test binary left the key at %s", k)
	}
	renamed := e2eTool
	renamed.testPackages = maps.Clone(e2eTool.testPackages)
	renamed.testPackages["e2e.test"] = "k8s.io/kubernetes/test/e2e_node"
	a, _, err := e2eTool.cacheKey("tools/e2e")
	if err != nil {
		t.Fatal(err)
	}
	if b, _, _ := renamed.cacheKey("tools/e2e"); a == b {
		t.Errorf("another test package left the e2e key at %s", a)
	}
}

func TestBuildsTestBinariesWithTestC(t *testing.T) {
	bs := e2eTool.builds()
	if len(bs) != 2 {
		t.Fatalf("e2e tool builds %d binaries, want 2: %v", len(bs), bs)
	}
	if bs[0].name != "agnhost" || len(bs[0].goCmd) != 1 || bs[0].goCmd[0] != "build" {
		t.Errorf("first build %+v, want agnhost with go build", bs[0])
	}
	if bs[1].name != "e2e.test" || !slices.Equal(bs[1].goCmd, []string{"test", "-c", "-vet=off"}) {
		t.Errorf("second build %+v, want e2e.test with go test -c -vet=off", bs[1])
	}
}

// A tool with Go files of its own (CoreDNS's main) is rebuilt when they
// change.
func TestCacheKeyCoversOwnSources(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join("tools/coredns", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, _, err := corednsTool.cacheKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if after, _, _ := corednsTool.cacheKey(dir); after == before {
		t.Errorf("a changed main.go left the key at %s", before)
	}
}

// The kube-router peer is keyed by the version its module requires, so that
// a version bump builds afresh.
func TestKubeRouterToolKeyedByVersion(t *testing.T) {
	key, version, err := kubeRouterTool.cacheKey("tools/kuberouter")
	if err != nil {
		t.Fatal(err)
	}
	if version != "v2.1.0" || !strings.HasPrefix(key, "kuberouter-v2.1.0-") {
		t.Fatalf("cacheKey = %q, %q; want kuberouter-v2.1.0-<hash>, v2.1.0", key, version)
	}
}
