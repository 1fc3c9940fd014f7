package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Ports nfrouter serves on 127.0.0.1 inside its node namespace.
const (
	metricsPort = 9101
	healthPort  = 20244
)

// NFRouter is one nfrouter process in a node namespace, run under strace so
// that every execve/execveat of its process tree is recorded.
type NFRouter struct {
	Node     *Node
	proc     *Process // strace
	pid      int      // nfrouter itself
	trace    string   // strace output
	http     *http.Client
	restarts int
}

// StartNFRouter runs nfrouter in node's namespace with a kubeconfig holding
// a token of deploy/'s ServiceAccount (ApplyRBAC must have run). extra flags
// follow the bed's own. Starting again on the same node (a restart) reuses the
// returned handle for the new process.
func (b *Bed) StartNFRouter(ctx context.Context, node *Node, extra ...string) (*NFRouter, error) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return nil, fmt.Errorf("nfrouter: strace is needed to count execve (make setup installs it): %w", err)
	}
	token, err := b.serviceAccountToken(ctx)
	if err != nil {
		return nil, err
	}
	kubeconfig := b.logPath(node.Name + ".kubeconfig")
	if err := writeKubeconfig(kubeconfig, "https://127.0.0.1:"+strconv.Itoa(APIProxyPort), b.pki.CA, token); err != nil {
		return nil, err
	}
	b.mu.Lock()
	r := b.routers[node.Name]
	if r == nil {
		r = &NFRouter{Node: node, http: nsHTTPClient(node)}
		b.routers[node.Name] = r
	} else {
		r.restarts++
	}
	b.mu.Unlock()
	name := fmt.Sprintf("nfrouter-%s-%d", node.Name, r.restarts)
	r.trace = b.logPath(name + ".strace")
	args := []string{
		// Trace only these two calls, filtered in the kernel (seccomp-bpf), so
		// nfrouter runs at nearly full speed; -f follows every thread and child.
		"-f", "--seccomp-bpf", "-qq", "-e", "trace=execve,execveat", "-e", "signal=none", "-o", r.trace, "--",
		b.cfg.NFRouter,
		"--kubeconfig=" + kubeconfig, "--hostname-override=" + node.Name,
		// Everything on, as the DaemonSet runs it: services through the
		// nftables proxy (the host kernel has no IPVS), pod routes from the
		// BGP mesh, whose graceful restart keeps them on the other nodes
		// while one nfrouter restarts.
		"--run-service-proxy=true", "--service-proxy=nftables",
		"--run-router=true", "--bgp-graceful-restart=true",
		"--metrics-addr=127.0.0.1", "--metrics-port=" + strconv.Itoa(metricsPort),
		"--health-addr=127.0.0.1", "--health-port=" + strconv.Itoa(healthPort),
		"--log-format=json",
	}
	// strace is PID 1 of a PID namespace of its own: if the harness dies
	// hard (Pdeathsig kills strace), the kernel kills nfrouter with it,
	// where strace would merely detach and leave it running.
	p, err := b.spawn.StartProcess(ProcessSpec{Name: name, Log: b.logPath(name + ".log"), NS: node.NS, Cloneflags: syscall.CLONE_NEWPID,
		Env: b.nfrouterEnv, Bin: strace, Args: append(args, extra...)})
	if err != nil {
		return nil, err
	}
	r.proc = p
	pid, err := childPid(ctx, p, b.cfg.NFRouter)
	if err != nil {
		p.Stop(time.Second)
		return nil, err
	}
	r.pid = pid
	b.cleanups.Add("stop "+name, func() error {
		if !r.stopProc(p, pid) {
			return fmt.Errorf("%s ignored SIGTERM for 10s and was killed", name)
		}
		return nil
	})
	return r, nil
}

// childPid waits for strace to have started nfrouter and returns its pid
// (as the harness sees it). strace forks a short-lived child of its own
// first to probe seccomp support, so the child must be running bin.
func childPid(ctx context.Context, p *Process, bin string) (int, error) {
	path := fmt.Sprintf("/proc/%d/task/%d/children", p.Pid(), p.Pid())
	return pollUntil(ctx, 10*time.Second, func() (int, bool, error) {
		select {
		case <-p.Done():
			return 0, false, fmt.Errorf("%s exited at start (%v); see %s", p.Name, p.Err(), p.Log)
		default:
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, false, nil
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return 0, false, err
			}
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == bin {
				return pid, true, nil
			}
		}
		return 0, false, nil
	})
}

// SetNFRouterEnv sets environment variables for nfrouter processes started
// from now on.
func (b *Bed) SetNFRouterEnv(env ...string) { b.nfrouterEnv = env }

// Stop ends nfrouter with SIGTERM (a clean shutdown), then SIGKILL if it
// has not exited within 10 s, and waits for it. It reports whether the
// SIGTERM sufficed.
func (r *NFRouter) Stop() bool { return r.stopProc(r.proc, r.pid) }

// stopProc stops strace process p and its tracee pid. nfrouter itself is
// signalled: strace, killed first, would detach and leave it running.
func (r *NFRouter) stopProc(p *Process, pid int) bool {
	select {
	case <-p.Done():
		return true
	default:
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-p.Done():
		return true
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		p.Stop(time.Second)
	}
	return false
}

// Kill ends nfrouter with SIGKILL, as a crash or OOM kill would.
func (r *NFRouter) Kill() {
	_ = syscall.Kill(r.pid, syscall.SIGKILL)
	<-r.proc.Done()
}

// Exited is closed when the process has exited.
func (r *NFRouter) Exited() <-chan struct{} { return r.proc.Done() }

// Log is the file holding nfrouter's log.
func (r *NFRouter) Log() string { return r.proc.Log }

// Execs counts the execve and execveat calls of nfrouter's process tree so
// far, not counting strace's own exec of nfrouter.
func (r *NFRouter) Execs() (int, []string, error) { return countExecs(r.trace, "nfrouter") }

// Pid is nfrouter's pid as the harness sees it.
func (r *NFRouter) Pid() int { return r.pid }

// Fetch GETs path (e.g. /debug/pprof/heap) from nfrouter's metrics listener
// and writes the answer to file.
func (r *NFRouter) Fetch(ctx context.Context, path, file string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(metricsPort)+path, nil)
	c := *r.http
	c.Timeout = 0 // a CPU profile takes as long as it asks for
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("nfrouter on %s: %s: %w", r.Node.Name, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("nfrouter on %s: %s: %s", r.Node.Name, path, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("nfrouter on %s: %s: %w", r.Node.Name, path, err)
	}
	return f.Close()
}

// WaitHealthy waits until /healthz answers 200 and the first firewall sync
// has succeeded (health is OK from the start, before any sync).
func (r *NFRouter) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	_, err := pollUntil(ctx, timeout, func() (struct{}, bool, error) {
		select {
		case <-r.proc.Done():
			return struct{}{}, false, fmt.Errorf("nfrouter on %s exited (%v); see %s", r.Node.Name, r.proc.Err(), r.proc.Log)
		default:
		}
		resp, err := r.http.Get("http://127.0.0.1:" + strconv.Itoa(healthPort) + "/healthz")
		if err != nil {
			return struct{}{}, false, nil
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return struct{}{}, false, nil
		}
		m, err := r.Metrics(ctx)
		if err != nil {
			return struct{}{}, false, nil
		}
		return struct{}{}, m.Sum("nfrouter_syncs_total", `backend="nftables"`, `result="ok"`) >= 1, nil
	})
	if err != nil {
		return fmt.Errorf("nfrouter on %s not healthy: %w", r.Node.Name, err)
	}
	return nil
}

// Metrics scrapes nfrouter's metrics endpoint.
func (r *NFRouter) Metrics(ctx context.Context) (Metrics, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(metricsPort)+"/metrics", nil)
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape nfrouter on %s: %w", r.Node.Name, err)
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

// WaitMetrics scrapes r until ok holds or timeout passes, and returns the
// last scrape.
func (r *NFRouter) WaitMetrics(ctx context.Context, timeout time.Duration, ok func(Metrics) bool) (Metrics, error) {
	return pollUntil(ctx, timeout, func() (Metrics, bool, error) {
		m, err := r.Metrics(ctx)
		if err != nil {
			return nil, false, err
		}
		return m, ok(m), nil
	})
}

// nsHTTPClient dials inside the node's namespace, where nfrouter's
// servers listen on 127.0.0.1.
func nsHTTPClient(n *Node) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := kerneltest.Do(n.NS, func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

// pollUntil calls check every 20 ms until it reports done or an error, or
// timeout passes.
func pollUntil[T any](ctx context.Context, timeout time.Duration, check func() (T, bool, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		v, done, err := check()
		if err != nil || done {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("condition not met: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// CPUSeconds reads the user and system CPU time nfrouter has used so far
// from /proc, measured from outside: nfrouter's own process metrics cannot
// see it here, since it runs in a PID namespace of its own under the
// machine's /proc.
func (r *NFRouter) CPUSeconds() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.pid))
	if err != nil {
		return 0, fmt.Errorf("nfrouter on %s: CPU time: %w", r.Node.Name, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("nfrouter on %s: CPU time: malformed stat %q", r.Node.Name, b)
	}
	var ticks float64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("nfrouter on %s: CPU time: %w", r.Node.Name, err)
		}
		ticks += float64(v)
	}
	return ticks / clockTicks, nil
}
