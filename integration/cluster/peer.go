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

// Peer is another implementation in a node namespace, the benchmarks'
// comparison (kube-proxy, kube-router), run under strace like nfrouter so that
// the processes it starts are counted, in a PID namespace of its own.
type Peer struct {
	Node    *Node
	program string
	proc    *Process
	pid     int
	trace   string
}

// KubeProxy is kube-proxy as a Peer.
type KubeProxy = Peer

// StartKubeProxy runs kube-proxy (bin) in node's namespace with the
// harness's admin credentials in the given mode (nftables, iptables, ipvs).
// It leaves the machine's global conntrack settings alone (max-per-core 0)
// and serves metrics and health on the node's loopback only.
func (b *Bed) StartKubeProxy(ctx context.Context, node *Node, bin, mode string, extra ...string) (*KubeProxy, error) {
	kubeconfig, err := b.peerKubeconfig(node, "kube-proxy")
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--hostname-override=" + node.Name, "--proxy-mode=" + mode,
		// 0: do not touch nf_conntrack_max and the hash size, which are the
		// machine's, not the node namespace's.
		"--conntrack-max-per-core=0",
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256",
	}
	return b.startPeer(ctx, node, "kube-proxy", bin, append(args, extra...))
}

// StartKubeRouter runs kube-router (bin) in node's namespace as a
// NetworkPolicy firewall only (no service proxy, no BGP router: neither
// touches sysctls then), with the harness's admin credentials. It finds its
// Node by --hostname-override and its local pods by the node's InternalIP in
// their status.hostIP, both of which the bed writes. Its iptables and ipset
// commands act in the node's namespace only.
func (b *Bed) StartKubeRouter(ctx context.Context, node *Node, bin string, extra ...string) (*Peer, error) {
	for _, tool := range []string{"iptables", "iptables-restore", "ipset"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("kube-router needs %s (Debian packages iptables and ipset): %w", tool, err)
		}
	}
	kubeconfig, err := b.peerKubeconfig(node, "kube-router")
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--hostname-override=" + node.Name,
		"--run-firewall=true", "--run-service-proxy=false", "--run-router=false", "--health-port=0"}
	return b.startPeer(ctx, node, "kube-router", bin, append(args, extra...))
}

func (b *Bed) peerKubeconfig(node *Node, program string) (string, error) {
	kubeconfig := b.logPath(node.Name + "-" + program + ".kubeconfig")
	err := writeKubeconfig(kubeconfig, "https://127.0.0.1:"+strconv.Itoa(APIProxyPort), b.pki.CA, b.pki.AdminToken)
	return kubeconfig, err
}

// startPeer runs bin under strace -f (execve only) in node's network
// namespace and a new PID namespace.
func (b *Bed) startPeer(ctx context.Context, node *Node, program, bin string, args []string) (*Peer, error) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return nil, fmt.Errorf("%s: strace is needed to count execve (make setup installs it): %w", program, err)
	}
	name := program + "-" + node.Name
	k := &Peer{Node: node, program: program, trace: b.logPath(name + ".strace")}
	sargs := []string{"-f", "--seccomp-bpf", "-qq", "-e", "trace=execve,execveat", "-e", "signal=none", "-o", k.trace, "--", bin}
	p, err := b.spawn.StartProcess(ProcessSpec{Name: name, Log: b.logPath(name + ".log"), NS: node.NS, Cloneflags: syscall.CLONE_NEWPID,
		Bin: strace, Args: append(sargs, args...)})
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

// Pid is the peer's pid as the harness sees it.
func (k *Peer) Pid() int { return k.pid }

// Log is the file holding the peer's log.
func (k *Peer) Log() string { return k.proc.Log }

// Exited is closed when the peer has exited.
func (k *Peer) Exited() <-chan struct{} { return k.proc.Done() }

// Stop ends the peer with SIGTERM, then SIGKILL after 10 s.
func (k *Peer) Stop() {
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

// Execs counts the processes the peer's tree started (execve and execveat),
// not counting strace's exec of the peer itself.
func (k *Peer) Execs() (int, error) {
	n, _, err := countExecs(k.trace, k.program)
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
