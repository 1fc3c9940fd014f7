package netpol

import (
	"net/netip"

	"github.com/nfrouter/nfrouter/model"
)

// families says which address families the firewall plans for: [v4, v6].
//
// A family is planned only while the state holds an address of it (a pod's,
// a pod CIDR of this node, or an ipBlock): every set and rule costs kernel
// time at cold start and on every message that names a set, and a
// single-stack cluster never sends traffic of the other family to its pods.
// A family coming or going replans everything, which is rare.
type families [2]bool

// list returns the planned families as v6 flags, IPv4 first.
func (f families) list() []bool {
	var out []bool
	for _, v6 := range []bool{false, true} {
		if f[idx(v6)] {
			out = append(out, v6)
		}
	}
	return out
}

// famCount counts the objects that bring each family: [v4, v6].
type famCount [2]int

func (c famCount) families() families { return families{c[0] > 0, c[1] > 0} }

func (c *famCount) addrs(sign int, addrs ...netip.Addr) {
	var seen [2]bool
	for _, a := range addrs {
		seen[idx(a.Is6())] = true
	}
	c.add(sign, seen)
}

func (c *famCount) prefixes(sign int, ps ...netip.Prefix) {
	var seen [2]bool
	for _, p := range ps {
		seen[idx(p.Addr().Is6())] = true
	}
	c.add(sign, seen)
}

func (c *famCount) add(sign int, seen [2]bool) {
	for i, ok := range seen {
		if ok {
			c[i] += sign
		}
	}
}

func (c *famCount) pod(sign int, pod *model.Pod) {
	if pod != nil {
		c.addrs(sign, pod.IPs...)
	}
}

func (c *famCount) node(sign int, n *model.Node) {
	if n != nil {
		c.prefixes(sign, n.PodCIDRs...)
	}
}

func (c *famCount) policy(sign int, pol *model.Policy) {
	if pol == nil {
		return
	}
	var ps []netip.Prefix
	for _, rules := range [][]model.PolicyRule{pol.IngressRules, pol.EgressRules} {
		for _, r := range rules {
			for _, peer := range r.Peers {
				if peer.IPBlock != nil {
					ps = append(ps, peer.IPBlock.CIDR)
				}
			}
		}
	}
	c.prefixes(sign, ps...)
}
