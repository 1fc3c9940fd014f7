package bgp

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// KubeRouterRouteProtocol marks the routes kube-router installs (its
// ZebraOriginator, 0x11).
const KubeRouterRouteProtocol netlink.RouteProtocol = 0x11

// kubeRouterTunnel matches kube-router's ipip tunnel names: "tun-" and 11
// hex digits of a hash of the remote node's address.
var kubeRouterTunnel = regexp.MustCompile(`^tun-[0-9a-f]{11}$`)

// Cleanup removes, in the network namespace of the calling thread, what the
// router programs: routes of RouteProtocol (in every table) and the ipip
// tunnels named TunnelPrefix*. It returns one line per object removed:
// nothing on a second run. Routes of other protocols and other links are not
// touched.
func Cleanup() ([]string, error) {
	return cleanupRoutes(RouteProtocol, "", func(name string) bool { return strings.HasPrefix(name, TunnelPrefix) })
}

// CleanupKubeRouter removes kube-router's routes (protocol 0x11) and its
// ipip tunnels (tun-<hash>), so that nfrouter's router can install its own
// for the same prefixes.
func CleanupKubeRouter() ([]string, error) {
	return cleanupRoutes(KubeRouterRouteProtocol, "kube-router's ", kubeRouterTunnel.MatchString)
}

func cleanupRoutes(proto netlink.RouteProtocol, whose string, isTunnel func(string) bool) ([]string, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open rtnetlink: %w", err)
	}
	defer h.Close()
	var removed []string
	// RT_FILTER_TABLE with table 0: every table, not only main.
	routes, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: proto, Table: unix.RT_TABLE_UNSPEC},
		netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if err := h.RouteDel(&r); err != nil {
			return removed, fmt.Errorf("remove route %s: %w", r.Dst, err)
		}
		removed = append(removed, fmt.Sprintf("%sroute %s (protocol %d, table %d)", whose, r.Dst, proto, r.Table))
	}
	links, err := h.LinkList()
	if err != nil {
		return removed, fmt.Errorf("list links: %w", err)
	}
	for _, l := range links {
		if _, ipip := l.(*netlink.Iptun); !ipip || !isTunnel(l.Attrs().Name) {
			continue
		}
		if err := h.LinkDel(l); err != nil {
			return removed, fmt.Errorf("remove tunnel %s: %w", l.Attrs().Name, err)
		}
		removed = append(removed, fmt.Sprintf("%sipip tunnel %s", whose, l.Attrs().Name))
	}
	return removed, nil
}
