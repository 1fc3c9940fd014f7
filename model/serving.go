package model

import (
	"net/netip"
	"slices"
)

// Serving picks the endpoints a service address of family is4 sends new
// connections to: the ready ones, or, when none is ready, those that are
// serving and terminating (so that a rolling update does not drop traffic
// while the old pods still serve). With local only nodeName's endpoints
// count, for the ready set and for the fallback. The result keeps e's order.
func (e Endpoints) Serving(is4, local bool, nodeName string) Endpoints {
	var ready, fallback Endpoints
	for _, ep := range e {
		if ep.Addr.Is4() != is4 || (local && ep.Node != nodeName) {
			continue
		}
		switch {
		case ep.Ready:
			ready = append(ready, ep)
		case ep.Serving && ep.Terminating:
			fallback = append(fallback, ep)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return fallback
}

// NodePortAddrs are the addresses a NodePort listens on: the node's first
// internal address of each family (its node IPs, kube-proxy's "primary";
// the external one when it has no internal one), or with all every address
// the Node object lists, or with cidrs (--nodeport-addresses) every address
// it lists within them.
func (n *Node) NodePortAddrs(all bool, cidrs []netip.Prefix) []netip.Addr {
	if n == nil {
		return nil
	}
	if len(cidrs) > 0 {
		var out []netip.Addr
		for _, a := range n.NodePortAddrs(true, nil) {
			if slices.ContainsFunc(cidrs, func(p netip.Prefix) bool { return p.Contains(a) }) {
				out = append(out, a)
			}
		}
		return out
	}
	if all {
		out := slices.Clone(n.InternalIPs)
		for _, a := range n.ExternalIPs {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
		return out
	}
	var out []netip.Addr
	for _, is4 := range []bool{true, false} {
		if a, ok := firstOfFamily(n.InternalIPs, is4); ok {
			out = append(out, a)
		} else if a, ok := firstOfFamily(n.ExternalIPs, is4); ok {
			out = append(out, a)
		}
	}
	return out
}

func firstOfFamily(addrs []netip.Addr, is4 bool) (netip.Addr, bool) {
	for _, a := range addrs {
		if a.Is4() == is4 {
			return a, true
		}
	}
	return netip.Addr{}, false
}
