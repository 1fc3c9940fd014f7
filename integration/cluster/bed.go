package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Config says what a bed needs from its caller; paths are passed in, never
// assumed.
type Config struct {
	// Binaries are the control-plane programs (EnsureBinaries).
	Binaries Binaries
	// NFRouter is the nfrouter binary; DeployDir holds deploy/'s manifests
	// (the bed applies its RBAC).
	NFRouter  string
	DeployDir string
	// Nodes is the number of node namespaces (default 2).
	Nodes int
	// Progress receives one line per start-up step (nil: discarded).
	Progress io.Writer
	Log      *slog.Logger // nil: discard
}

// Bed is a running test bed. Close it to stop and remove everything.
type Bed struct {
	cfg      Config
	log      *slog.Logger
	dir      string
	spawn    *Spawner
	cleanups Cleanups
	pki      *pki
	cp       controlPlane
	client   kubernetes.Interface

	fabric  netns.NsHandle
	fabricH *netlink.Handle
	bridge  *netlink.Bridge
	Nodes   []*Node

	// mu protects pods and routers.
	mu      sync.Mutex
	pods    map[string]*Pod // namespace/name
	routers map[string]*NFRouter

	nfrouterEnv []string

	// Started is how long Start took.
	Started time.Duration
}

// Start builds a bed: control plane, fabric, nodes (registered as Node
// objects) and deploy/'s RBAC. On error everything made so far is removed.
// SIGINT and SIGTERM close the bed and exit the process with status 130.
func Start(ctx context.Context, cfg Config) (_ *Bed, err error) {
	begin := time.Now()
	if cfg.Nodes == 0 {
		cfg.Nodes = 2
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.NFRouter, err = filepath.Abs(cfg.NFRouter); err != nil {
		return nil, fmt.Errorf("bed: nfrouter binary: %w", err)
	}
	b := &Bed{cfg: cfg, log: cfg.Log, pods: map[string]*Pod{}, routers: map[string]*NFRouter{}}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	b.cleanups.CloseOnSignal("cleaning up the test bed", b.log)
	if b.dir, err = NewWorkDir(&b.cleanups, "nfrouter-cluster-", false); err != nil {
		return nil, fmt.Errorf("bed: %w", err)
	}
	if b.spawn, err = NewSpawner(); err != nil {
		return nil, err
	}
	// Registered first so it runs last: the spawner's thread must outlive
	// every child (Pdeathsig).
	b.cleanups.Add("stop spawner", func() error { b.spawn.Close(); return nil })
	if b.pki, err = newPKI(b.dir); err != nil {
		return nil, err
	}
	b.progress("starting control plane in %s", b.dir)
	if err := b.startControlPlane(ctx, cfg.Binaries); err != nil {
		return nil, err
	}
	if b.client, err = kubernetes.NewForConfig(b.cp.admin); err != nil {
		return nil, fmt.Errorf("bed: client: %w", err)
	}
	if err := b.newFabric(); err != nil {
		return nil, err
	}
	for i := 1; i <= cfg.Nodes; i++ {
		n, err := b.addNode(i)
		if err != nil {
			return nil, err
		}
		b.Nodes = append(b.Nodes, n)
		if err := b.registerNode(ctx, n); err != nil {
			return nil, err
		}
	}
	b.progress("%d nodes up", len(b.Nodes))
	b.Started = time.Since(begin)
	return b, nil
}

// Dir is the bed's work directory: logs, keys, kubeconfigs.
func (b *Bed) Dir() string { return b.dir }

// Close stops every process the bed started (by pid) and removes every
// namespace, link and file it made. Safe to call more than once and
// concurrently: later callers wait until the first has finished.
func (b *Bed) Close() error { return b.cleanups.Close(b.log) }

func (b *Bed) progress(format string, args ...any) {
	fmt.Fprintf(b.cfg.Progress, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// registerNode creates the Node object with its pod CIDR and InternalIP, Ready.
func (b *Bed) registerNode(ctx context.Context, n *Node) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{"kubernetes.io/hostname": n.Name}},
		Spec:       corev1.NodeSpec{PodCIDR: n.PodCIDR.String(), PodCIDRs: []string{n.PodCIDR.String()}},
	}
	created, err := b.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("register %s: %w", n.Name, err)
	}
	created.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: n.IP.String()},
		{Type: corev1.NodeHostName, Address: n.Name},
	}
	created.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	if _, err := b.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("register %s: status: %w", n.Name, err)
	}
	return nil
}

// Node returns the node named name.
func (b *Bed) Node(name string) (*Node, error) {
	for _, n := range b.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, errors.New("no node " + name)
}

// logPath is a file in the work directory.
func (b *Bed) logPath(name string) string { return filepath.Join(b.dir, name) }
