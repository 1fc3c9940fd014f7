package model

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationPrefix marks the node and service annotations nfrouter reads; they
// keep kube-router's names so that clusters can switch without re-annotating.
const AnnotationPrefix = "kube-router.io/"

// Node is what the router and the service proxy know of a node.
type Node struct {
	Name        string
	InternalIPs []netip.Addr // sorted
	ExternalIPs []netip.Addr // sorted
	PodCIDRs    []netip.Prefix
	// Zone is the node's topology.kubernetes.io/zone label, "" when none:
	// the zone whose topology hints its proxy follows.
	Zone string
	// Annotations holds only the kube-router.io/ annotations.
	Annotations map[string]string
}

// NodeFromAPI converts a node.
func NodeFromAPI(n *corev1.Node) (*Node, error) {
	var internal, external []string
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeInternalIP:
			internal = append(internal, a.Address)
		case corev1.NodeExternalIP:
			external = append(external, a.Address)
		}
	}
	out := &Node{Name: n.Name, Zone: n.Labels[corev1.LabelTopologyZone], Annotations: KubeRouterAnnotations(n.Annotations)}
	var err error
	if out.InternalIPs, err = parseAddrs(internal); err != nil {
		return nil, fmt.Errorf("node %s: internal address: %w", n.Name, err)
	}
	if out.ExternalIPs, err = parseAddrs(external); err != nil {
		return nil, fmt.Errorf("node %s: external address: %w", n.Name, err)
	}
	cidrs := n.Spec.PodCIDRs
	if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
		cidrs = []string{n.Spec.PodCIDR}
	}
	for _, c := range cidrs {
		p, err := parsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("node %s: pod CIDR: %w", n.Name, err)
		}
		out.PodCIDRs = append(out.PodCIDRs, p)
	}
	return out, nil
}

// KubeRouterAnnotations returns the kube-router.io/ annotations, or nil when
// there are none (without allocating), so that unrelated annotation churn
// compares equal.
func KubeRouterAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if strings.HasPrefix(k, AnnotationPrefix) {
			if out == nil {
				out = make(map[string]string)
			}
			out[k] = v
		}
	}
	return out
}

// Equal reports whether two nodes, either of which may be nil, are the same.
func (n *Node) Equal(o *Node) bool {
	if n == nil || o == nil {
		return n == o
	}
	return n.Name == o.Name && slices.Equal(n.InternalIPs, o.InternalIPs) &&
		slices.Equal(n.ExternalIPs, o.ExternalIPs) && slices.Equal(n.PodCIDRs, o.PodCIDRs) &&
		n.Zone == o.Zone && maps.Equal(n.Annotations, o.Annotations)
}
