package model

import (
	"iter"
	"net/netip"
	"slices"
	"strings"
)

// PodCIDRs returns the pod CIDRs of every node in nodes, in node name order.
func PodCIDRs(nodes iter.Seq2[string, *Node]) []netip.Prefix {
	var sorted []*Node
	for _, n := range nodes {
		sorted = append(sorted, n)
	}
	slices.SortFunc(sorted, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	var out []netip.Prefix
	for _, n := range sorted {
		out = append(out, n.PodCIDRs...)
	}
	return out
}

// ClusterCIDRs returns the cluster's pod networks: flag (--cluster-cidr) when
// it names any, else the pod CIDRs of every node, which then change with the
// nodes.
func ClusterCIDRs(flag []netip.Prefix, nodes Map[string, *Node]) []netip.Prefix {
	if len(flag) > 0 {
		return flag
	}
	return PodCIDRs(nodes.All())
}
