package model

import (
	"net/netip"
	"slices"
)

// PodCIDRs returns the pod CIDRs of every node in nodes, in node name order.
func PodCIDRs(nodes Map[string, *Node]) []netip.Prefix {
	var out []netip.Prefix
	for _, name := range slices.Sorted(nodes.Keys()) {
		out = append(out, nodes.Get(name).PodCIDRs...)
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
	return PodCIDRs(nodes)
}
