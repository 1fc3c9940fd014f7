package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nfrouter/nfrouter/integration/cluster"
	"github.com/nfrouter/nfrouter/integration/node"
)

// nodeTier is a running set of nodes that e2e.test can reach.
type nodeTier interface {
	Kubeconfig() string
	Close() error
}

// startNodeTier starts o.nodes kubelet nodes, imports nfrouter's image and
// archives (image reference → archive) into every node's containerd, and
// applies deploy/ (through a kustomization that only names the image and
// sets what a cluster without kube-proxy needs), then waits until every
// node and nfrouter on it are ready.
func startNodeTier(ctx context.Context, o options, archives map[string]string, log *slog.Logger) (_ nodeTier, err error) {
	bins, err := cluster.EnsureBinaries(ctx, filepath.Join(o.repo, "integration/cluster/tools"), filepath.Join(o.cache, "cluster"), os.Stdout, log)
	if err != nil {
		return nil, err
	}
	imagesDir, err := filepath.Abs(filepath.Join(o.out, "images"))
	if err != nil {
		return nil, err
	}
	pause, err := node.BuildImage(ctx, imagesDir, "pause", node.PauseRef, "github.com/nfrouter/nfrouter/integration/node/cmd/pause")
	if err != nil {
		return nil, err
	}
	c, err := node.Start(ctx, node.Config{Binaries: bins, Nodes: o.nodes, PauseImage: pause,
		ClusterDNS: o.dnsIP, Progress: os.Stdout, Log: log, KeepDir: o.keep})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for _, a := range append([]string{o.nfrouter}, slicesSortedValues(archives)...) {
		if err := c.ImportImage(ctx, a); err != nil {
			return nil, err
		}
	}
	overlay, err := node.WriteDeployOverlay(filepath.Join(o.out, "deploy"), filepath.Join(o.repo, "deploy"), o.nfrouterRef)
	if err != nil {
		return nil, err
	}
	if _, err := c.Kubectl(ctx, "apply", "-k", overlay); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, c.Client(), o.nodes, 5*time.Minute); err != nil {
		return nil, err
	}
	return c, nil
}

// waitReady waits until nodes nodes are Ready and nfrouter's DaemonSet has a
// ready pod on each.
func waitReady(ctx context.Context, cs kubernetes.Interface, nodes int, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		var ds *appsv1.DaemonSet
		if ds, err = cs.AppsV1().DaemonSets("kube-system").Get(ctx, "nfrouter", metav1.GetOptions{}); err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d/%d nodes Ready, nfrouter ready on %d", ready, nodes, ds.Status.NumberReady)
		return ready == nodes && int(ds.Status.NumberReady) == nodes, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not ready after %s (%s): %w", timeout, last, err)
	}
	return nil
}

func slicesSortedValues(m map[string]string) []string {
	var vs []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		vs = append(vs, m[k])
	}
	return vs
}
