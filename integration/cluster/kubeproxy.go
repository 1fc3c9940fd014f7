package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KubeProxy is kube-proxy in a node namespace, the benchmarks' peer, run
// under strace like nfrouter so that the processes it starts are counted.
type KubeProxy struct {
	Node  *Node
	proc  *Process
	pid   int
	trace string
}

// StartKubeProxy runs kube-proxy (bin) in node's namespace with the
// harness's admin credentials in the given mode (nftables, iptables, ipvs).
// It leaves the machine's global conntrack settings alone (max-per-core 0)
// and serves metrics and health on the node's loopback only.
func (b *Bed) StartKubeProxy(ctx context.Context, node *Node, bin, mode string, extra ...string) (*KubeProxy, error) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return nil, fmt.Errorf("kube-proxy: strace is needed to count execve (make setup installs it): %w", err)
	}
	kubeconfig := b.logPath(node.Name + "-kube-proxy.kubeconfig")
	if err := writeKubeconfig(kubeconfig, "https://127.0.0.1:"+strconv.Itoa(APIProxyPort), b.pki.CA, b.pki.AdminToken); err != nil {
		return nil, err
	}
	name := "kube-proxy-" + node.Name
	k := &KubeProxy{Node: node, trace: b.logPath(name + ".strace")}
	args := []string{
		"-f", "--seccomp-bpf", "-qq", "-e", "trace=execve,execveat", "-e", "signal=none", "-o", k.trace, "--",
		bin, "--kubeconfig=" + kubeconfig, "--hostname-override=" + node.Name, "--proxy-mode=" + mode,
		// 0: do not touch nf_conntrack_max and the hash size, which are the
		// machine's, not the node namespace's.
		"--conntrack-max-per-core=0",
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256",
	}
	p, err := b.spawn.StartProcess(ProcessSpec{Name: name, Log: b.logPath(name + ".log"), NS: node.NS, Cloneflags: syscall.CLONE_NEWPID,
		Bin: strace, Args: append(args, extra...)})
	if err != nil {
		return nil, err
	}
	k.proc = p
	if k.pid, err = childPid(ctx, p, bin); err != nil {
		p.Stop(time.Second)
		return nil, err
	}
	b.cleanups.Add("stop "+name, func() error { k.Stop(); return nil })
	return k, nil
}

// Pid is kube-proxy's pid as the harness sees it.
func (k *KubeProxy) Pid() int { return k.pid }

// Log is the file holding kube-proxy's log.
func (k *KubeProxy) Log() string { return k.proc.Log }

// Exited is closed when kube-proxy has exited.
func (k *KubeProxy) Exited() <-chan struct{} { return k.proc.Done() }

// Stop ends kube-proxy with SIGTERM, then SIGKILL after 10 s.
func (k *KubeProxy) Stop() {
	select {
	case <-k.proc.Done():
		return
	default:
	}
	_ = syscall.Kill(k.pid, syscall.SIGTERM)
	select {
	case <-k.proc.Done():
		return
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(k.pid, syscall.SIGKILL)
	k.proc.Stop(5 * time.Second)
}

// Execs counts the processes kube-proxy's tree started (execve and
// execveat), not counting strace's exec of kube-proxy itself.
func (k *KubeProxy) Execs() (int, error) {
	n, _, err := countExecs(k.trace, "kube-proxy")
	return n, err
}

// countExecs reads an strace output and returns the execs after the first,
// which must be that of the traced program.
func countExecs(trace, program string) (int, []string, error) {
	f, err := os.Open(trace)
	if err != nil {
		return 0, nil, fmt.Errorf("strace output: %w", err)
	}
	defer f.Close()
	var calls []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "execve(") || strings.Contains(line, "execveat(") {
			calls = append(calls, line)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, nil, fmt.Errorf("strace output: %w", err)
	}
	if len(calls) == 0 || !strings.Contains(calls[0], program) {
		return 0, calls, fmt.Errorf("strace output %s does not start with the exec of %s", trace, program)
	}
	return len(calls) - 1, calls[1:], nil
}
