package cluster

import (
	"bufio"
	"context"
	"fmt"
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
// follow the bed's own.
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
		"-f", "--seccomp-bpf", "-qq", "-e", "trace=execve,execveat", "-o", r.trace, "--",
		b.cfg.NFRouter,
		"--kubeconfig=" + kubeconfig, "--hostname-override=" + node.Name,
		"--run-service-proxy=false", "--run-router=false",
		"--metrics-addr=127.0.0.1", "--metrics-port=" + strconv.Itoa(metricsPort),
		"--health-addr=127.0.0.1", "--health-port=" + strconv.Itoa(healthPort),
		"--log-format=json",
	}
	p, err := b.spawn.startProcess(name, b.logPath(name+".log"), node.NS, strace, append(args, extra...)...)
	if err != nil {
		return nil, err
	}
	b.cleanups.add("stop "+name, func() error { r.stopProc(p); return nil })
	r.proc = p
	if r.pid, err = childPid(ctx, p); err != nil {
		return nil, err
	}
	return r, nil
}

// childPid waits for strace to have started nfrouter and returns its pid.
func childPid(ctx context.Context, p *Process) (int, error) {
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
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false, nil
		}
		pid, err := strconv.Atoi(f[0])
		return pid, err == nil, err
	})
}

// Stop ends nfrouter with SIGTERM (a clean shutdown) and waits for it.
func (r *NFRouter) Stop() { r.stopProc(r.proc) }

func (r *NFRouter) stopProc(p *Process) {
	select {
	case <-p.Done():
		return
	default:
	}
	if r.pid != 0 && p == r.proc {
		_ = syscall.Kill(r.pid, syscall.SIGTERM)
		select {
		case <-p.Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
	p.Stop(5 * time.Second)
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
func (r *NFRouter) Execs() (int, []string, error) {
	f, err := os.Open(r.trace)
	if err != nil {
		return 0, nil, fmt.Errorf("strace output: %w", err)
	}
	defer f.Close()
	var calls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "execve(") || strings.Contains(line, "execveat(") {
			calls = append(calls, line)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, nil, fmt.Errorf("strace output: %w", err)
	}
	if len(calls) == 0 || !strings.Contains(calls[0], "nfrouter") {
		return 0, calls, fmt.Errorf("strace output %s does not start with the exec of nfrouter", r.trace)
	}
	return len(calls) - 1, calls[1:], nil
}

// WaitHealthy waits until /healthz answers 200 (the first full sync is done).
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
		return struct{}{}, resp.StatusCode == http.StatusOK, nil
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

