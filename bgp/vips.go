package bgp

import (
	"net/netip"

	"github.com/nfrouter/nfrouter/model"
)

// clusterPrefixes tracks every prefix the cluster owns: every node's pod
// CIDRs and every service VIP. Routes for them are never taken from external
// routers, and VIPs are never routed through BGP (the service proxy serves
// them on every node). Updated per changed key, counted per source.
type clusterPrefixes struct {
	bySource map[any][]netip.Prefix
	count    map[netip.Prefix]int
	vips     map[netip.Prefix]int
}

func newClusterPrefixes() *clusterPrefixes {
	return &clusterPrefixes{bySource: map[any][]netip.Prefix{}, count: map[netip.Prefix]int{}, vips: map[netip.Prefix]int{}}
}

// update recomputes the changed nodes and service ports and returns the
// prefixes that appeared and disappeared, and those that became or stopped
// being a VIP (possibly both in one update).
func (c *clusterPrefixes) update(state *model.State, changes *model.Changes) (added, removed, vipsChanged []netip.Prefix) {
	set := func(src any, want []netip.Prefix, vip bool) {
		old := c.bySource[src]
		for _, p := range want {
			if vip {
				if c.vips[p]++; c.vips[p] == 1 {
					vipsChanged = append(vipsChanged, p)
				}
			}
			if c.count[p]++; c.count[p] == 1 {
				added = append(added, p)
			}
		}
		for _, p := range old {
			if vip {
				if c.vips[p]--; c.vips[p] == 0 {
					delete(c.vips, p)
					vipsChanged = append(vipsChanged, p)
				}
			}
			if c.count[p]--; c.count[p] == 0 {
				delete(c.count, p)
				removed = append(removed, p)
			}
		}
		if len(want) == 0 {
			delete(c.bySource, src)
		} else {
			c.bySource[src] = want
		}
	}
	nodes, ports := map[string]bool{}, map[model.ServicePortKey]bool{}
	if changes.Full {
		for src := range c.bySource {
			switch k := src.(type) {
			case string:
				nodes[k] = true
			case model.ServicePortKey:
				ports[k] = true
			}
		}
		for k := range state.Nodes.All() {
			nodes[k] = true
		}
		for k := range state.ServicePorts.All() {
			ports[k] = true
		}
	} else {
		for k := range changes.Nodes {
			nodes[k] = true
		}
		for k := range changes.ServicePorts {
			ports[k] = true
		}
	}
	for name := range nodes {
		var want []netip.Prefix
		if n := state.Nodes.Get(name); n != nil {
			want = dedupPrefixes(n.PodCIDRs)
		}
		set(name, want, false)
	}
	for k := range ports {
		var want []netip.Prefix
		if sp := state.ServicePorts.Get(k); sp != nil {
			for _, list := range [][]netip.Addr{sp.ClusterIPs, sp.ExternalIPs, sp.LoadBalancerIPs} {
				for _, a := range list {
					want = append(want, netip.PrefixFrom(a, a.BitLen()))
				}
			}
		}
		set(k, dedupPrefixes(want), true)
	}
	// A prefix both added and removed in one update (moved between sources)
	// is neither.
	added, removed = cancelOut(added, removed)
	return added, removed, vipsChanged
}

func cancelOut(added, removed []netip.Prefix) ([]netip.Prefix, []netip.Prefix) {
	in := map[netip.Prefix]int{}
	for _, p := range added {
		in[p]++
	}
	for _, p := range removed {
		in[p]--
	}
	var a, r []netip.Prefix
	for p, n := range in {
		if n > 0 {
			a = append(a, p)
		} else if n < 0 {
			r = append(r, p)
		}
	}
	return a, r
}

// PodCIDRs returns every node's pod CIDRs: the cluster CIDRs that pod egress
// masquerading leaves alone.
func (c *clusterPrefixes) podCIDRs() []netip.Prefix {
	var out []netip.Prefix
	for p := range c.count {
		if c.vips[p] == 0 {
			out = append(out, p)
		}
	}
	return dedupPrefixes(out)
}
