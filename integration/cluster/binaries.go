package cluster

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Binaries are the Kubernetes programs the test beds run: the control plane
// for the cluster bed; kubelet, kube-scheduler and kubectl for the node tier;
// kube-proxy as the benchmarks' peer.
type Binaries struct {
	Etcd              string
	APIServer         string
	ControllerManager string
	Scheduler         string
	Kubelet           string
	KubeProxy         string
	Kubectl           string
}

// tool is one build: a module directory under tools/ and its main packages.
type tool struct {
	dir      string // under the tools directory
	module   string // the required module whose version keys the cache
	packages map[string]string
	// testPackages are built with `go test -c`: upstream's end-to-end suite
	// is the test binary of its package.
	testPackages map[string]string
	// versionPkg, when set, is the package whose gitVersion is stamped with
	// the module's version: an unstamped kubelet reports v0.0.0-master, which
	// the API server and kubectl take for a skewed node.
	versionPkg string
}

var tools = []tool{
	{dir: "etcd", module: "go.etcd.io/etcd/server/v3", packages: map[string]string{
		"etcd": "go.etcd.io/etcd/server/v3",
	}},
	{dir: "kube", module: "k8s.io/kubernetes", packages: map[string]string{
		"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
		"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
		"kube-scheduler":          "k8s.io/kubernetes/cmd/kube-scheduler",
		"kubelet":                 "k8s.io/kubernetes/cmd/kubelet",
		"kube-proxy":              "k8s.io/kubernetes/cmd/kube-proxy",
		"kubectl":                 "k8s.io/kubernetes/cmd/kubectl",
	}, versionPkg: "k8s.io/component-base/version"},
}

// e2eTool builds upstream's end-to-end suite and agnhost, the program its
// test pods run, from the same Kubernetes release as the kube tool. It is a
// module of its own so that the suite's extra dependencies never change the
// kube tool's cache key (a rebuild of it takes ~13 min).
var e2eTool = tool{dir: "e2e", module: "k8s.io/kubernetes",
	packages:     map[string]string{"agnhost": "k8s.io/kubernetes/test/images/agnhost"},
	testPackages: map[string]string{"e2e.test": "k8s.io/kubernetes/test/e2e"},
	versionPkg:   "k8s.io/component-base/version"}

// corednsTool builds the e2e runs' cluster DNS: main.go in its module
// directory, CoreDNS with the few plugins a test cluster needs.
var corednsTool = tool{dir: "coredns", module: "github.com/coredns/coredns",
	packages: map[string]string{"coredns": "github.com/nfrouter/nfrouter/integration/cluster/tools/coredns"}}

// kubeRouterTool builds kube-router, the firewall peer of bench-compare's
// pod churn scenario: a benchmark peer only, in a module of its own.
var kubeRouterTool = tool{dir: "kuberouter", module: "github.com/cloudnativelabs/kube-router/v2",
	packages: map[string]string{"kube-router": "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"}}

// EnsureKubeRouter returns kube-router's binary, building it first (about
// 3 min on 2 cores) when cacheDir does not hold it yet, in the way of
// EnsureBinaries.
func EnsureKubeRouter(ctx context.Context, toolsDir, cacheDir string, progress io.Writer, log *slog.Logger) (string, error) {
	paths, err := ensureTools(ctx, []tool{kubeRouterTool}, toolsDir, cacheDir, progress, log)
	if err != nil {
		return "", err
	}
	return paths["kube-router"], nil
}

// E2EBinaries are upstream's end-to-end suite, agnhost and the cluster DNS.
type E2EBinaries struct {
	E2ETest string
	Agnhost string
	CoreDNS string // empty when not asked for
}

// EnsureBinaries returns the control-plane binaries, building them first when
// cacheDir does not hold them yet. Each tool's binaries live in a directory
// named by its module version and a hash of its go.mod and go.sum, so a
// version bump builds afresh and later runs reuse the build. The first build
// of Kubernetes takes about 13 minutes on 2 cores; it runs under nice, its
// progress goes to progress, and a lock file makes concurrent callers wait
// for one build instead of doing it twice.
func EnsureBinaries(ctx context.Context, toolsDir, cacheDir string, progress io.Writer, log *slog.Logger) (Binaries, error) {
	paths, err := ensureTools(ctx, tools, toolsDir, cacheDir, progress, log)
	if err != nil {
		return Binaries{}, err
	}
	return Binaries{Etcd: paths["etcd"], APIServer: paths["kube-apiserver"], ControllerManager: paths["kube-controller-manager"],
		Scheduler: paths["kube-scheduler"], Kubelet: paths["kubelet"], KubeProxy: paths["kube-proxy"], Kubectl: paths["kubectl"]}, nil
}

// EnsureE2EBinaries returns e2e.test and agnhost, and CoreDNS when withDNS,
// building them first (about 4 min on 2 cores when the Kubernetes packages
// are already compiled; CoreDNS 6-14 min more) when cacheDir does not hold
// them yet, in the way of EnsureBinaries.
func EnsureE2EBinaries(ctx context.Context, toolsDir, cacheDir string, withDNS bool, progress io.Writer, log *slog.Logger) (E2EBinaries, error) {
	ts := []tool{e2eTool}
	if withDNS {
		ts = append(ts, corednsTool)
	}
	paths, err := ensureTools(ctx, ts, toolsDir, cacheDir, progress, log)
	if err != nil {
		return E2EBinaries{}, err
	}
	return E2EBinaries{E2ETest: paths["e2e.test"], Agnhost: paths["agnhost"], CoreDNS: paths["coredns"]}, nil
}

// ensureTools builds the tools missing from cacheDir, one caller at a time,
// and returns the path of every binary by name.
func ensureTools(ctx context.Context, ts []tool, toolsDir, cacheDir string, progress io.Writer, log *slog.Logger) (map[string]string, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("binaries: cache directory: %w", err)
	}
	// A finished build's directory never changes (it appears by rename), so
	// when every tool is built there is nothing to wait for: the lock is
	// held for as long as any build runs, of any tool.
	if paths, ok := cachedPaths(ts, toolsDir, cacheDir); ok {
		return paths, nil
	}
	lock, err := os.OpenFile(filepath.Join(cacheDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("binaries: lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("binaries: lock: %w", err)
	}
	paths := map[string]string{}
	for _, t := range ts {
		dir, err := t.ensure(ctx, filepath.Join(toolsDir, t.dir), cacheDir, progress, log)
		if err != nil {
			return nil, err
		}
		for name := range t.packages {
			paths[name] = filepath.Join(dir, name)
		}
		for name := range t.testPackages {
			paths[name] = filepath.Join(dir, name)
		}
	}
	return paths, nil
}

// cachedPaths returns the path of every binary of ts by name when every
// tool's build is complete in cacheDir.
func cachedPaths(ts []tool, toolsDir, cacheDir string) (map[string]string, bool) {
	paths := map[string]string{}
	for _, t := range ts {
		key, _, err := t.cacheKey(filepath.Join(toolsDir, t.dir))
		if err != nil {
			return nil, false
		}
		dir := filepath.Join(cacheDir, key)
		if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
			return nil, false
		}
		for _, b := range t.builds() {
			paths[b.name] = filepath.Join(dir, b.name)
		}
	}
	return paths, true
}

func (t tool) ensure(ctx context.Context, modDir, cacheDir string, progress io.Writer, log *slog.Logger) (string, error) {
	key, version, err := t.cacheKey(modDir)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cacheDir, key)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		log.Debug("Using cached binaries", "dir", dir)
		return dir, nil
	}
	tmp, err := os.MkdirTemp(cacheDir, key+".building-")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", key, err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	fmt.Fprintf(progress, "building %s into %s (the first build of Kubernetes takes ~13 min on 2 cores; cached afterwards)\n", key, cacheDir)
	ldflags := t.ldflags(version)
	for _, b := range t.builds() {
		// -v prints each package as it is compiled: visible progress.
		args := append([]string{"-n", "10", goCommand()}, b.goCmd...)
		args = append(args, "-v", "-trimpath", "-ldflags", ldflags, "-o", filepath.Join(tmp, b.name), b.pkg)
		cmd := exec.CommandContext(ctx, "nice", args...)
		cmd.Dir = modDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
		if err := runWithProgress(cmd, progress, b.name); err != nil {
			return "", fmt.Errorf("build %s (%s): %w", b.name, b.pkg, err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", fmt.Errorf("build %s: %w", key, err)
	}
	os.RemoveAll(dir) // a partial directory from an interrupted older layout
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("build %s: %w", key, err)
	}
	fmt.Fprintf(progress, "built %s in %s\n", key, time.Since(start).Round(time.Second))
	return dir, nil
}

type build struct {
	name, pkg string
	goCmd     []string // "build", or "test -c"
}

// builds lists the tool's binaries in a fixed order: programs (go build),
// then test binaries (go test -c).
func (t tool) builds() []build {
	var bs []build
	for _, name := range slices.Sorted(maps.Keys(t.packages)) {
		bs = append(bs, build{name, t.packages[name], []string{"build"}})
	}
	for _, name := range slices.Sorted(maps.Keys(t.testPackages)) {
		// go test would vet the whole suite first: minutes, for nothing here.
		bs = append(bs, build{name, t.testPackages[name], []string{"test", "-c", "-vet=off"}})
	}
	return bs
}

// ldflags stamps the version into versionPkg and strips debug information
// (the binaries are only run, never debugged, and the cache holds them).
func (t tool) ldflags(version string) string {
	flags := "-s -w"
	if t.versionPkg != "" {
		major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
		minor, _, _ = strings.Cut(minor, ".")
		flags += fmt.Sprintf(" -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
			t.versionPkg, version, major, minor)
	}
	return flags
}

// cacheKey is "<dir>-<version>-<hash of go.mod, go.sum, the module's own
// Go files, the packages and the flags they are built with>", and the
// version.
func (t tool) cacheKey(modDir string) (key, version string, err error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(modDir, f))
		if err != nil {
			return "", "", fmt.Errorf("build %s: %w", t.dir, err)
		}
		h.Write(b)
		if f != "go.mod" {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
			if len(fields) >= 2 && fields[0] == t.module {
				version = fields[1]
			}
		}
	}
	if version == "" {
		return "", "", fmt.Errorf("build %s: go.mod does not require %s", t.dir, t.module)
	}
	for _, name := range slices.Sorted(maps.Keys(t.packages)) {
		fmt.Fprintf(h, "%s=%s\n", name, t.packages[name])
	}
	// A tool's own Go files (a main package of its module) are part of its
	// build; the modules without any keep their keys.
	sources, err := filepath.Glob(filepath.Join(modDir, "*.go"))
	if err != nil {
		return "", "", fmt.Errorf("build %s: %w", t.dir, err)
	}
	for _, f := range sources {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", "", fmt.Errorf("build %s: %w", t.dir, err)
		}
		fmt.Fprintf(h, "source %s\n", filepath.Base(f))
		h.Write(b)
	}
	// Only tools with test binaries hash them, so that the other tools'
	// keys (and their cached builds) stay as they were.
	for _, name := range slices.Sorted(maps.Keys(t.testPackages)) {
		fmt.Fprintf(h, "test %s=%s\n", name, t.testPackages[name])
	}
	h.Write([]byte(t.ldflags(version)))
	return fmt.Sprintf("%s-%s-%s", t.dir, version, hex.EncodeToString(h.Sum(nil))[:8]), version, nil
}

// runWithProgress runs cmd and writes one line per 50 compiled packages (and
// errors in full) to progress.
func runWithProgress(cmd *exec.Cmd, progress io.Writer, name string) error {
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return err
	}
	var tail []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, " ") || strings.HasPrefix(line, "#") {
				tail = append(tail, line) // compiler and module messages
				if len(tail) > 40 {
					tail = tail[1:]
				}
				continue
			}
			n++
			if n%50 == 0 {
				fmt.Fprintf(progress, "  %s: %d packages compiled (%s)\n", name, n, line)
			}
		}
	}()
	err := cmd.Wait()
	w.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%w\n%s", err, strings.Join(tail, "\n"))
	}
	return nil
}

// goCommand is $GO (the Makefile's) or go.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}
