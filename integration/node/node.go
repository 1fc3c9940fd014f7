package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/cluster"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Node is one kubelet node: a network namespace with eth0 on the control
// plane's bridge, and a private mount namespace in which its containerd and
// kubelet run.
type Node struct {
	Name string
	IP   netip.Addr
	// NS is the node's network namespace (hostNetwork pods run in it).
	NS netns.NsHandle
	// Dir holds the node's files; Dir/log is its /var/log (pod logs).
	Dir string

	cluster    *Cluster
	cgroups    *cgroupParent
	holder     *Process // keeps the mount namespace; its pid names it
	containerd *Process
	kubelet    *Process
	socket     string // containerd's, on the harness's file system
}

// kubelet's writes to global sysctls, answered by files bound over
// /proc/sys in the node's mount namespace: kubelet reads the value it wants
// and writes nothing.
var kubeletSysctls = map[string]string{
	"vm/overcommit_memory": "1",
	"kernel/panic":         "10",
	"kernel/panic_on_oops": "1",
}

// mountScript makes the node's private mounts (the node's root file system,
// as a kind node container has its own) and then waits, holding the mount
// namespace. $1 is the node's directory.
const mountScript = `set -e
d=$1
# containerd's shim sockets, runc's root, libcni's cache and netns, kubelet's
# root: fixed paths, one per node.
mount -n -t tmpfs -o mode=755 tmpfs /run
mount -n -t tmpfs -o mode=755 tmpfs /var/lib
mount -n --bind "$d/log" /var/log
# /etc/cni/net.d is kubelet's hostPath and containerd's CNI config directory;
# an overlay lets the node have it without touching the machine's /etc.
mount -n -t overlay overlay -o "lowerdir=/etc,upperdir=$d/etc/upper,workdir=$d/etc/work" /etc
mkdir -p /etc/cni/net.d
for f in "$d"/sysctl/*; do mount -n --bind "$f" "/proc/sys/$(basename "$f" | tr . /)"; done
echo ready
exec sleep infinity
`

func (c *Cluster) startNode(ctx context.Context, i int, cgroups *cgroupParent) (*Node, error) {
	n := &Node{Name: "node-" + strconv.Itoa(i), IP: netip.AddrFrom4([4]byte{192, 168, 50, byte(10 + i)}),
		cluster: c, cgroups: cgroups}
	n.Dir = filepath.Join(c.dir, n.Name)
	n.socket = filepath.Join(n.Dir, "containerd.sock")
	for _, d := range []string{"log", "etc/upper", "etc/work", "sysctl"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	for k, v := range kubeletSysctls {
		if err := os.WriteFile(filepath.Join(n.Dir, "sysctl", strings.ReplaceAll(k, "/", ".")), []byte(v+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	if err := n.network(); err != nil {
		return nil, err
	}
	if err := cgroups.make(n.Name + "/system"); err != nil {
		return nil, err
	}
	// Undone after the processes below are stopped (cleanups run newest
	// first): whatever still runs in the node's cgroups — containers and
	// their shims — was started for this node.
	c.cleanups.Add("kill "+n.Name+" cgroups", func() error { return cgroups.kill(n.Name, 30*time.Second) })
	if err := n.startHolder(ctx); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	if c.cfg.PauseImage != "" {
		if err := n.importImage(ctx, c.cfg.PauseImage); err != nil {
			return nil, err
		}
	}
	if err := n.startKubelet(); err != nil {
		return nil, err
	}
	return n, nil
}

// network makes the node's namespace: eth0 (a veth whose peer is on br0)
// with the node's address, a default route via the control plane, and
// forwarding on (the node routes its pods).
func (n *Node) network() error {
	c := n.cluster
	ns, err := kerneltest.CreateNetNS()
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	c.cleanups.Add("close "+n.Name+" namespace", ns.Close)
	n.NS = ns
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("%s: netlink: %w", n.Name, err)
	}
	defer h.Close()
	peer := "veth-" + n.Name
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: peer}, PeerName: "eth0", PeerNamespace: netlink.NsFd(ns)}
	if err := c.cpH.LinkAdd(veth); err != nil {
		return fmt.Errorf("%s: veth: %w", n.Name, err)
	}
	br, err := c.cpH.LinkByName("br0")
	if err != nil {
		return fmt.Errorf("%s: bridge: %w", n.Name, err)
	}
	l, err := c.cpH.LinkByName(peer)
	if err != nil {
		return fmt.Errorf("%s: veth: %w", n.Name, err)
	}
	if err := c.cpH.LinkSetMaster(l, br); err != nil {
		return fmt.Errorf("%s: veth to bridge: %w", n.Name, err)
	}
	if err := c.cpH.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s: veth up: %w", n.Name, err)
	}
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("%s: eth0: %w", n.Name, err)
	}
	if err := h.AddrAdd(eth0, kerneltest.Addr(n.IP, 24)); err != nil {
		return fmt.Errorf("%s: address: %w", n.Name, err)
	}
	if err := h.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("%s: eth0 up: %w", n.Name, err)
	}
	gw := net.ParseIP(APIServerIP)
	if err := h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gw}); err != nil {
		return fmt.Errorf("%s: default route: %w", n.Name, err)
	}
	// Per network namespace, so the machine's own are untouched. Bridged pod
	// traffic passes netfilter only with br_netfilter's sysctls at 1 (a
	// node's setup; kubeadm checks them).
	return kerneltest.Do(ns, func() error {
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
			return fmt.Errorf("%s: ip_forward: %w", n.Name, err)
		}
		for _, f := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables"} {
			err := os.WriteFile("/proc/sys/net/bridge/"+f, []byte("1"), 0o644)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %s: %w", n.Name, f, err)
			}
		}
		return nil
	})
}

// startHolder starts the process whose private mount namespace the node's
// containerd and kubelet join, and waits until its mounts are made.
func (n *Node) startHolder(ctx context.Context) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	defer r.Close()
	p, err := n.cluster.spawn.StartProcess(cluster.ProcessSpec{Name: n.Name + "-mounts", Log: filepath.Join(n.Dir, "mounts.log"),
		NS: n.NS, Stdout: w, Bin: "unshare",
		Args: []string{"--mount", "--propagation", "private", "sh", "-c", mountScript, "sh", n.Dir}})
	w.Close()
	if err != nil {
		return err
	}
	n.holder = p
	n.cluster.cleanups.Add("stop "+n.Name+" mount namespace", func() error { p.Stop(5 * time.Second); return nil })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if strings.TrimSpace(s) != "ready" {
			<-p.Done()
			log, _ := os.ReadFile(p.Log)
			return fmt.Errorf("%s: mounts failed (%v): %s", n.Name, p.Err(), log)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: mounts not made within 30s", n.Name)
	}
}

// startInNode starts bin in the node: its network namespace, its mount
// namespace, its system cgroup.
func (n *Node) startInNode(name string, bin string, args ...string) (*Process, error) {
	script := `for f in $1; do echo $$ > "$f"; done; p=$2; shift 2; exec nsenter --mount=/proc/$p/ns/mnt -- "$@"`
	all := append([]string{"-c", script, "sh", strings.Join(n.cgroups.procsFiles(n.Name+"/system"), " "),
		strconv.Itoa(n.holder.Pid()), bin}, args...)
	p, err := n.cluster.spawn.StartProcess(cluster.ProcessSpec{Name: n.Name + "-" + name, Log: filepath.Join(n.Dir, name+".log"),
		NS: n.NS, Bin: "sh", Args: all})
	if err != nil {
		return nil, err
	}
	return p, nil
}

const containerdConfig = `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = %[1]q
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[2]q
  # root here lacks CAP_SYS_RESOURCE: runc could not lower a container's
  # oom_score_adj below its own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[3]q
    conf_dir = "/etc/cni/net.d"
`

func (n *Node) startContainerd(ctx context.Context) error {
	cfg := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, containerdConfig, n.socket, PauseRef, CNIBinDir), 0o644); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	p, err := n.startInNode("containerd", "containerd", "--config", cfg)
	if err != nil {
		return err
	}
	n.containerd = p
	n.cluster.cleanups.Add("stop "+n.Name+" containerd", func() error { p.Stop(10 * time.Second); return nil })
	err = poll(ctx, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		select {
		case <-p.Done():
			return false, fmt.Errorf("%s: containerd exited (%v); see %s", n.Name, p.Err(), p.Log)
		default:
		}
		conn, err := net.Dial("unix", n.socket)
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: containerd: %w", n.Name, err)
	}
	return nil
}

func (n *Node) importImage(ctx context.Context, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.socket, "--namespace", "k8s.io",
		"images", "import", "--all-platforms", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: import %s: %w\n%s", n.Name, archive, err, out)
	}
	return nil
}

const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 (hybrid) and no systemd here.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[3]s}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
clusterDomain: cluster.local
resolvConf: %[4]s
failSwapOn: false
volumePluginDir: /var/lib/kubelet/volumeplugins
podLogsDir: /var/log/pods
# The machine's disk is shared with everything else: never evict for it.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`

func (n *Node) startKubelet() error {
	c := n.cluster
	kubeconfig := filepath.Join(n.Dir, "kubelet.kubeconfig")
	server := "https://" + net.JoinHostPort(APIServerIP, strconv.Itoa(APIServerPort))
	if _, err := c.clientKubeconfig(kubeconfig, server, n.Name, "system:node:"+n.Name, "system:nodes"); err != nil {
		return err
	}
	resolv := filepath.Join(n.Dir, "resolv.conf")
	if err := os.WriteFile(resolv, nil, 0o644); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	cfg := filepath.Join(n.Dir, "kubelet.yaml")
	config := fmt.Appendf(nil, kubeletConfig, n.cgroups.path(n.Name), n.socket, c.pki.CAFile, resolv)
	if c.cfg.ClusterDNS != "" {
		config = fmt.Appendf(config, "clusterDNS: [%q]\n", c.cfg.ClusterDNS)
	}
	if err := os.WriteFile(cfg, config, 0o644); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	p, err := n.startInNode("kubelet", c.cfg.Binaries.Kubelet, "--config="+cfg, "--kubeconfig="+kubeconfig,
		"--hostname-override="+n.Name, "--node-ip="+n.IP.String(), "--v=1")
	if err != nil {
		return err
	}
	n.kubelet = p
	c.cleanups.Add("stop "+n.Name+" kubelet", func() error { p.Stop(10 * time.Second); return nil })
	return nil
}

// PodNetNS opens the network namespace of the pod with uid, found through
// the pod's cgroup (kubelet names it pod<uid>); close it after use.
func (n *Node) PodNetNS(uid string) (netns.NsHandle, error) {
	want := "pod" + uid
	var pid int
	for _, m := range n.cgroups.mounts {
		_ = filepath.WalkDir(filepath.Join(m, n.cgroups.name, n.Name), func(p string, d fs.DirEntry, err error) error {
			if err != nil || pid != 0 || d.IsDir() || d.Name() != "cgroup.procs" || !strings.Contains(p, "/"+want+"/") {
				return nil
			}
			b, _ := os.ReadFile(p)
			if f := strings.Fields(string(b)); len(f) > 0 {
				pid, _ = strconv.Atoi(f[0])
			}
			return nil
		})
	}
	if pid == 0 {
		return -1, fmt.Errorf("%s: no process of pod %s", n.Name, uid)
	}
	ns, err := netns.GetFromPid(pid)
	if err != nil {
		return -1, fmt.Errorf("%s: pod %s network namespace: %w", n.Name, uid, err)
	}
	return ns, nil
}
