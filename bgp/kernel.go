package bgp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RouteProtocol marks the routes nfrouter installs (rtm_protocol). Only
// routes with it are listed, replaced or deleted, so routes of anybody else
// are never touched. 78 is unused in iproute2's rt_protos and by the routing
// daemons (bird 12, zebra 11, kube-router 0x11, bgp 186..192).
const RouteProtocol netlink.RouteProtocol = 78

// errForeignRoute means a route for the prefix exists that we did not make.
var errForeignRoute = errors.New("a route not made by nfrouter exists for this prefix")

// Kernel installs routes and tunnels with netlink in one network namespace.
type Kernel struct {
	h *netlink.Handle
}

// NewKernel opens a netlink handle in the caller's network namespace.
func NewKernel() (*Kernel, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open netlink: %w", err)
	}
	return &Kernel{h: h}, nil
}

// Close closes the handle; routes stay.
func (k *Kernel) Close() { k.h.Close() }

// Subnets returns the prefixes of the addresses on this node's interfaces.
func (k *Kernel) Subnets() ([]netip.Prefix, error) {
	addrs, err := k.h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if p, ok := prefixFromIPNet(a.IPNet); ok && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
			out = append(out, p.Masked())
		}
	}
	return out, nil
}

// Routes reads back our routes of the main table.
func (k *Kernel) Routes() (map[netip.Prefix]Route, error) {
	rs, err := k.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	out := make(map[netip.Prefix]Route, len(rs))
	for _, r := range rs {
		dst, ok := prefixFromIPNet(r.Dst)
		if !ok {
			continue
		}
		route := Route{Dst: dst}
		if gw, ok := netip.AddrFromSlice(r.Gw); ok && r.Gw != nil {
			route.Gw = gw.Unmap()
		} else if link, err := k.h.LinkByIndex(r.LinkIndex); err == nil {
			if t, ok := link.(*netlink.Iptun); ok && strings.HasPrefix(t.Name, TunnelPrefix) {
				route.Tunnel = t.Name
				route.TunnelRemote, _ = netip.AddrFromSlice(t.Remote.To4())
			}
		}
		out[dst] = route
	}
	return out, nil
}

// Install adds or replaces our route for r.Dst. A route for the same prefix
// that is not ours is left alone and reported as errForeignRoute.
func (k *Kernel) Install(r Route, local netip.Addr) error {
	nr := &netlink.Route{Dst: ipNet(r.Dst), Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
	if r.Tunnel != "" {
		idx, err := k.ensureTunnel(r.Tunnel, local, r.TunnelRemote)
		if err != nil {
			return err
		}
		nr.LinkIndex, nr.Scope = idx, netlink.SCOPE_LINK
	} else {
		nr.Gw = r.Gw.AsSlice()
	}
	err := k.h.RouteAdd(nr)
	if errors.Is(err, unix.EEXIST) {
		mine, lerr := k.ownsRoute(r.Dst)
		if lerr != nil {
			return lerr
		}
		if !mine {
			return fmt.Errorf("install route %s: %w", r, errForeignRoute)
		}
		err = k.h.RouteReplace(nr)
	}
	if err != nil {
		return fmt.Errorf("install route %s: %w", r, err)
	}
	return nil
}

func (k *Kernel) ownsRoute(dst netip.Prefix) (bool, error) {
	rs, err := k.h.RouteListFiltered(familyNumber(dst.Addr()), &netlink.Route{Dst: ipNet(dst), Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_DST|netlink.RT_FILTER_TABLE)
	if err != nil {
		return false, fmt.Errorf("list routes for %s: %w", dst, err)
	}
	for _, r := range rs {
		// kube-router's routes are taken over in place, so that a node
		// switching from kube-router keeps forwarding.
		if r.Protocol != RouteProtocol && r.Protocol != KubeRouterRouteProtocol {
			return false, nil
		}
	}
	return len(rs) > 0, nil
}

// Remove deletes our route for dst; a missing route is not an error, and a
// route of the same prefix that is not ours does not match. The scope is
// "nowhere", which matches any, as `ip route del` sends it: the kernel
// deletes only a route of the scope asked for, and a tunnel route has link
// scope where a route via a gateway has universe scope
// (net/ipv4/fib_trie.c, fib_table_delete).
func (k *Kernel) Remove(dst netip.Prefix) error {
	err := k.h.RouteDel(&netlink.Route{Dst: ipNet(dst), Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN, Scope: netlink.SCOPE_NOWHERE})
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("remove route %s: %w", dst, err)
	}
	return nil
}

// ensureTunnel returns the index of the ipip tunnel name, making it when
// missing.
func (k *Kernel) ensureTunnel(name string, local, remote netip.Addr) (int, error) {
	if l, err := k.h.LinkByName(name); err == nil {
		if l.Attrs().Flags&net.FlagUp == 0 {
			if err := k.h.LinkSetUp(l); err != nil {
				return 0, fmt.Errorf("tunnel %s up: %w", name, err)
			}
		}
		return l.Attrs().Index, nil
	}
	t := &netlink.Iptun{LinkAttrs: netlink.LinkAttrs{Name: name}, Local: local.AsSlice(), Remote: remote.AsSlice(), Ttl: 64, PMtuDisc: 1}
	err := k.h.LinkAdd(t)
	if errors.Is(err, unix.EEXIST) {
		// The kernel allows one ipip tunnel per pair of endpoints: a
		// kube-router tunnel to the same node gives way to ours.
		var removed bool
		if removed, err = k.removeKubeRouterTunnel(local, remote); err == nil && removed {
			err = k.h.LinkAdd(t)
		} else if err == nil {
			err = unix.EEXIST
		}
	}
	if err != nil {
		return 0, fmt.Errorf("add ipip tunnel %s to %s: %w", name, remote, err)
	}
	l, err := k.h.LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("tunnel %s: %w", name, err)
	}
	if err := k.h.LinkSetUp(l); err != nil {
		return 0, fmt.Errorf("tunnel %s up: %w", name, err)
	}
	return l.Attrs().Index, nil
}

// removeKubeRouterTunnel deletes kube-router's ipip tunnel between local and
// remote, if there is one.
func (k *Kernel) removeKubeRouterTunnel(local, remote netip.Addr) (bool, error) {
	links, err := k.h.LinkList()
	if err != nil {
		return false, fmt.Errorf("list links: %w", err)
	}
	for _, l := range links {
		t, ok := l.(*netlink.Iptun)
		if !ok || !kubeRouterTunnel.MatchString(t.Name) || !t.Local.Equal(local.AsSlice()) || !t.Remote.Equal(remote.AsSlice()) {
			continue
		}
		if err := k.h.LinkDel(l); err != nil {
			return false, fmt.Errorf("remove kube-router's tunnel %s: %w", t.Name, err)
		}
		return true, nil
	}
	return false, nil
}

// Tunnels lists our tunnels by name.
func (k *Kernel) Tunnels() ([]string, error) {
	links, err := k.h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var out []string
	for _, l := range links {
		if _, ok := l.(*netlink.Iptun); ok && strings.HasPrefix(l.Attrs().Name, TunnelPrefix) {
			out = append(out, l.Attrs().Name)
		}
	}
	return out, nil
}

// RemoveTunnel deletes one of our tunnels.
func (k *Kernel) RemoveTunnel(name string) error {
	l, err := k.h.LinkByName(name)
	if err != nil {
		return nil
	}
	if err := k.h.LinkDel(l); err != nil {
		return fmt.Errorf("remove tunnel %s: %w", name, err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func prefixFromIPNet(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a, ones), true
}

func familyNumber(a netip.Addr) int {
	if a.Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}
