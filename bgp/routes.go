package bgp

import (
	"fmt"
	"net/netip"
)

// TunnelPrefix starts the name of every ipip tunnel the router makes; links
// with other names are never touched.
const TunnelPrefix = "nfr-"

// BestPath is gobgp's best path for a prefix, or its withdrawal.
type BestPath struct {
	Prefix  netip.Prefix
	NextHop netip.Addr
	// Peer is the neighbor the path came from; invalid for paths we originate.
	Peer     netip.Addr
	Withdraw bool
}

// Route is one kernel route the router wants.
type Route struct {
	Dst netip.Prefix
	// Gw is the next hop of a direct route.
	Gw netip.Addr
	// Tunnel names the ipip tunnel to TunnelRemote when the route goes
	// through one; Gw is then invalid.
	Tunnel       string
	TunnelRemote netip.Addr
}

func (r Route) String() string {
	if r.Tunnel != "" {
		return fmt.Sprintf("%s dev %s (remote %s)", r.Dst, r.Tunnel, r.TunnelRemote)
	}
	return fmt.Sprintf("%s via %s", r.Dst, r.Gw)
}

// RouteEnv is what the route planner knows of the node.
type RouteEnv struct {
	// Local are this node's addresses; the IPv4 one is the local end of its
	// tunnels.
	Local FamilyAddrs
	// NodeAddrs maps other nodes' addresses to their names.
	NodeAddrs map[netip.Addr]string
	// Subnets are the prefixes of this node's interface addresses: a next hop
	// inside one is on a shared subnet.
	Subnets     []netip.Prefix
	Overlay     bool
	OverlayType string
	// Ignore lists prefixes that are never routed through BGP: what we
	// originate ourselves and the services' VIPs, which the service proxy
	// serves on every node.
	Ignore map[netip.Prefix]bool
}

// OnSubnet reports whether a is on a subnet this node has an address in.
func (e *RouteEnv) OnSubnet(a netip.Addr) bool {
	for _, s := range e.Subnets {
		if s.Contains(a) {
			return true
		}
	}
	return false
}

// PlanRoute turns one best path into the kernel route it asks for; false
// means there must be no route for the prefix:
//   - withdrawn paths, our own paths, paths back to us, ignored prefixes,
//     next hops of the other family: none;
//   - a node on a shared subnet: via the node, unless --overlay-type=full
//     and IPv4;
//   - an IPv4 node on another subnet with --enable-overlay (or any IPv4 node
//     with --overlay-type=full): through an ipip tunnel to it;
//   - an IPv6 node on another subnet: none, as ipip carries IPv4 only
//     (OffSubnetIPv6);
//   - anything else: via the next hop, which the kernel accepts only if it is
//     reachable on a link.
func PlanRoute(env *RouteEnv, p BestPath) (Route, bool) {
	if p.Withdraw || !p.Peer.IsValid() || !p.NextHop.IsValid() || env.Local.Has(p.NextHop) || env.Ignore[p.Prefix] {
		return Route{}, false
	}
	if p.Prefix.Addr().Is4() != p.NextHop.Is4() {
		return Route{}, false
	}
	if env.OffSubnetIPv6(p) {
		return Route{}, false
	}
	_, isNode := env.NodeAddrs[p.NextHop]
	tunnel := isNode && env.Overlay && p.NextHop.Is4() && env.Local.V4.IsValid() &&
		(env.OverlayType == OverlayFull || !env.OnSubnet(p.NextHop))
	if tunnel {
		return Route{Dst: p.Prefix, Tunnel: TunnelName(p.NextHop), TunnelRemote: p.NextHop}, true
	}
	return Route{Dst: p.Prefix, Gw: p.NextHop}, true
}

// OffSubnetIPv6 reports whether p is an IPv6 path from a node on another
// subnet, which nfrouter cannot route: the overlay is ipip, IPv4 only.
func (e *RouteEnv) OffSubnetIPv6(p BestPath) bool {
	if p.Withdraw || !p.NextHop.Is6() || !p.Prefix.Addr().Is6() {
		return false
	}
	_, isNode := e.NodeAddrs[p.NextHop]
	return isNode && !e.OnSubnet(p.NextHop)
}

// TunnelName names the tunnel to a remote node: TunnelPrefix and the address
// in hex, which fits the 15 bytes of an interface name.
func TunnelName(remote netip.Addr) string {
	b := remote.As4()
	return fmt.Sprintf("%s%02x%02x%02x%02x", TunnelPrefix, b[0], b[1], b[2], b[3])
}
