package bgp

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// TestKernelCleanupRemovesOurRoutesAndTunnels: nfrouter's routes and nfr-
// tunnels go with Cleanup, kube-router's routes and tun- tunnels with
// CleanupKubeRouter; a foreign ipip tunnel, a foreign dummy and foreign
// routes stay, and second runs find nothing.
func TestKernelCleanupRemovesOurRoutesAndTunnels(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	h := kerneltest.Handle(t, ns)
	mustAdd := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if err := h.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}}); err != nil {
		kerneltest.MissingFeature(t, "dummy interfaces", err)
	}
	eth0 := kerneltest.LinkUp(t, h, "eth0", "192.168.1.10/24")
	tunnel := func(name string, remote net.IP) netlink.Link {
		t.Helper()
		err := h.LinkAdd(&netlink.Iptun{LinkAttrs: netlink.LinkAttrs{Name: name}, Local: net.IPv4(192, 168, 1, 10), Remote: remote, Ttl: 64, PMtuDisc: 1})
		if err != nil {
			kerneltest.MissingFeature(t, "ipip tunnels", err)
		}
		l, err := h.LinkByName(name)
		mustAdd("find "+name, err)
		mustAdd(name+" up", h.LinkSetUp(l))
		return l
	}
	route := func(dst string, link netlink.Link, gw net.IP, proto netlink.RouteProtocol) {
		t.Helper()
		_, n, _ := net.ParseCIDR(dst)
		r := &netlink.Route{Dst: n, LinkIndex: link.Attrs().Index, Gw: gw, Protocol: proto}
		if gw == nil {
			r.Scope = netlink.SCOPE_LINK
		}
		mustAdd("route "+dst, h.RouteAdd(r))
	}
	// Foreign: an ipip tunnel, routes of bird and static.
	route("10.99.0.0/24", eth0, net.IPv4(192, 168, 1, 1), unix.RTPROT_STATIC)
	route("10.98.0.0/24", tunnel("foreign0", net.IPv4(10, 0, 0, 1)), nil, 12)
	snapshot := func() []string {
		var out []string
		links, err := h.LinkList()
		mustAdd("list links", err)
		for _, l := range links {
			out = append(out, "link "+l.Type()+" "+l.Attrs().Name)
		}
		routes, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		mustAdd("list routes", err)
		for _, r := range routes {
			out = append(out, fmt.Sprintf("route %s table %d proto %d", r.Dst, r.Table, r.Protocol))
		}
		slices.Sort(out)
		return out
	}
	before := snapshot()

	route("10.244.2.0/24", eth0, net.IPv4(192, 168, 1, 12), RouteProtocol)
	route("10.244.3.0/24", tunnel(TunnelPrefix+"c0a80214", net.IPv4(192, 168, 2, 20)), nil, RouteProtocol)
	route("10.244.4.0/24", tunnel("tun-0123456789a", net.IPv4(192, 168, 3, 30)), nil, KubeRouterRouteProtocol)
	route("10.244.5.0/24", eth0, net.IPv4(192, 168, 1, 15), KubeRouterRouteProtocol)

	run := func(fn func() ([]string, error)) []string {
		t.Helper()
		var removed []string
		mustAdd("cleanup", kerneltest.Do(ns, func() error {
			var err error
			removed, err = fn()
			return err
		}))
		return removed
	}
	got := strings.Join(run(Cleanup), "\n")
	want := "route 10.244.2.0/24 (protocol 78, table 254)\nroute 10.244.3.0/24 (protocol 78, table 254)\nipip tunnel nfr-c0a80214"
	if got != want {
		t.Errorf("Cleanup removed\n%s\nwant\n%s", got, want)
	}
	got = strings.Join(run(CleanupKubeRouter), "\n")
	want = "kube-router's route 10.244.4.0/24 (protocol 17, table 254)\nkube-router's route 10.244.5.0/24 (protocol 17, table 254)\nkube-router's ipip tunnel tun-0123456789a"
	if got != want {
		t.Errorf("CleanupKubeRouter removed\n%s\nwant\n%s", got, want)
	}
	if after := snapshot(); !slices.Equal(after, before) {
		t.Errorf("after cleanup:\n%s\nbefore:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if again := append(run(Cleanup), run(CleanupKubeRouter)...); len(again) != 0 {
		t.Errorf("second cleanup removed %q", again)
	}
}
