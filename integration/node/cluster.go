package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nfrouter/nfrouter/integration/cluster"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Config says what a cluster needs from its caller; paths are passed in,
// never assumed.
type Config struct {
	// Binaries are the Kubernetes programs (cluster.EnsureBinaries): etcd,
	// the API server, controller manager, scheduler and kubelet.
	Binaries cluster.Binaries
	// Nodes is the number of kubelet nodes (default 2).
	Nodes int
	// PauseImage is an image archive (WriteArchive) that every node's
	// containerd imports and uses as its sandbox image, named PauseRef.
	PauseImage string
	// Progress receives one line per start-up step (nil: discarded).
	Progress io.Writer
	Log      *slog.Logger // nil: discard
	// KeepDir leaves the work directory (logs, configs) for a look after Close.
	KeepDir bool
	// ClusterDNS, when set, is the kubelets' clusterDNS: the address of a
	// cluster DNS service the caller deploys (upstream's e2e runs do).
	ClusterDNS string
}

// PauseRef is the sandbox image's name in every node's containerd.
const PauseRef = "nfrouter.test/pause:1"

// Cluster is a running control plane and its kubelet nodes. Close it to stop
// and remove everything.
type Cluster struct {
	cfg        Config
	log        *slog.Logger
	dir        string
	spawn      *cluster.Spawner
	cleanups   cluster.Cleanups
	pki        *cluster.PKI
	cpNS       netns.NsHandle // control plane; holds the bridge br0
	cpH        *netlink.Handle
	apiURL     string // the harness's forwarder
	kubeconfig string
	rest       *rest.Config
	client     kubernetes.Interface
	// Nodes are the kubelet nodes, node-1 … node-N.
	Nodes []*Node
}

// Start makes the control plane and the nodes: kubelets registered, not
// yet Ready (they have no pod network until a CNI config appears). On error
// everything made so far is removed.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 2
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, log: cfg.Log}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	c.cleanups.CloseOnSignal("stopping the nodes", c.log)
	if err := removeStaleCgroups(); err != nil {
		return nil, fmt.Errorf("cluster: an earlier run's cgroups: %w", err)
	}
	if c.dir, err = cluster.NewWorkDir(&c.cleanups, "nfrouter-node-", cfg.KeepDir); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.spawn, err = cluster.NewSpawner(); err != nil {
		return nil, err
	}
	// Registered early so that it runs late: the spawner's thread must
	// outlive every child (Pdeathsig).
	c.cleanups.Add("stop spawner", func() error { c.spawn.Close(); return nil })
	if c.pki, err = cluster.NewPKI(c.dir); err != nil {
		return nil, err
	}
	if err := c.newControlPlaneNS(); err != nil {
		return nil, err
	}
	c.progress("starting control plane in %s", c.dir)
	if err := c.startControlPlane(ctx); err != nil {
		return nil, err
	}
	if c.rest, err = clientcmd.BuildConfigFromFlags("", c.kubeconfig); err != nil {
		return nil, fmt.Errorf("cluster: client: %w", err)
	}
	c.rest.QPS, c.rest.Burst = 100, 200
	if c.client, err = kubernetes.NewForConfig(c.rest); err != nil {
		return nil, fmt.Errorf("cluster: client: %w", err)
	}
	cgroups, err := newCgroupParent(cgroupPrefix + strconv.Itoa(os.Getpid()))
	if err != nil {
		return nil, err
	}
	c.cleanups.Add("remove cgroups", cgroups.remove)
	for i := 1; i <= cfg.Nodes; i++ {
		n, err := c.startNode(ctx, i, cgroups)
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	c.progress("%d kubelets started", len(c.Nodes))
	return c, nil
}

// Available reports why this machine cannot run nodes: not root, or a
// program missing.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("the node tier needs root (namespaces, mounts, cgroups)")
	}
	for _, p := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "nsenter", "unshare", "mount"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s missing (make setup installs containerd and runc)", p)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(CNIBinDir, p)); err != nil {
			return fmt.Errorf("CNI plugin %s missing in %s (make setup installs containernetworking-plugins)", p, CNIBinDir)
		}
	}
	return nil
}

// CNIBinDir holds the reference CNI plugins (Debian's containernetworking-plugins).
const CNIBinDir = "/usr/lib/cni"

// Dir is the cluster's work directory: logs, keys, kubeconfigs, node files.
func (c *Cluster) Dir() string { return c.dir }

// Kubeconfig is an admin kubeconfig for the API server, usable from the
// harness's network namespace (kubectl, e2e.test).
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig is the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// Client is an admin client.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Close stops every process the cluster started (by pid, and what runs in
// the nodes' cgroups), and removes every cgroup, namespace and file it
// made. Safe to call more than once.
func (c *Cluster) Close() error { return c.cleanups.Close(c.log) }

// newControlPlaneNS makes the control plane's network namespace with the
// bridge br0 that joins the nodes; the API server's address is on it.
func (c *Cluster) newControlPlaneNS() (err error) {
	c.cpNS, c.cpH, _, err = cluster.NewBridgeNS(&c.cleanups, "control-plane", kerneltest.Addr(netip.MustParseAddr(APIServerIP), 24))
	return err
}

// Kubectl runs kubectl with the admin kubeconfig and returns its output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.cfg.Binaries.Kubectl, append([]string{"--kubeconfig=" + c.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return out, nil
}

// ImportImage imports an image archive (OCI layout or docker save format)
// into every node's containerd, in the namespace the CRI plugin uses.
func (c *Cluster) ImportImage(ctx context.Context, archive string) error {
	for _, n := range c.Nodes {
		if err := n.importImage(ctx, archive); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) progress(format string, args ...any) {
	fmt.Fprintf(c.cfg.Progress, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Process is a child process of the cluster, known by its pid.
type Process = cluster.Process
