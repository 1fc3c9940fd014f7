package bgp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
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
	kerneltest.AddDummy(t, h, "eth0")
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
	snapshot := func() []string { return kerneltest.LinksAndRoutes(t, h) }
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

// routesOf lists the routes of ns for dst as "proto N via GW dev NAME".
func routesOf(t *testing.T, h *netlink.Handle, dst string) []string {
	t.Helper()
	_, n, _ := net.ParseCIDR(dst)
	rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: n}, netlink.RT_FILTER_DST)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		dev := ""
		if l, err := h.LinkByIndex(r.LinkIndex); err == nil {
			dev = l.Attrs().Name
		}
		out = append(out, fmt.Sprintf("proto %d via %v dev %s", r.Protocol, r.Gw, dev))
	}
	return out
}

// installIn installs r with a Kernel working in ns.
func installIn(t *testing.T, ns netns.NsHandle, r Route) error {
	t.Helper()
	var installErr error
	if err := kerneltest.Do(ns, func() error {
		k, err := NewKernel()
		if err != nil {
			return err
		}
		defer k.Close()
		installErr = k.Install(r, netip.MustParseAddr("192.168.1.10"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return installErr
}

// TestKernelTakesOverKubeRouterRoutes: a route kube-router installed for a
// prefix we route is replaced by ours in place; a foreign one is not.
func TestKernelTakesOverKubeRouterRoutes(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	h := kerneltest.Handle(t, ns)
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer0"}); err != nil {
		t.Fatal(err)
	}
	eth0 := kerneltest.LinkUp(t, h, "eth0", "192.168.1.10/24")
	kerneltest.LinkUp(t, h, "peer0", "192.168.9.1/24")
	for dst, proto := range map[string]netlink.RouteProtocol{"10.244.2.0/24": KubeRouterRouteProtocol, "10.244.3.0/24": unix.RTPROT_STATIC} {
		_, n, _ := net.ParseCIDR(dst)
		if err := h.RouteAdd(&netlink.Route{Dst: n, Gw: net.IPv4(192, 168, 1, 12), LinkIndex: eth0.Attrs().Index, Protocol: proto}); err != nil {
			t.Fatal(err)
		}
	}
	gw := netip.MustParseAddr("192.168.1.12")
	if err := installIn(t, ns, Route{Dst: netip.MustParsePrefix("10.244.2.0/24"), Gw: gw}); err != nil {
		t.Errorf("taking over kube-router's route: %v", err)
	}
	if got := routesOf(t, h, "10.244.2.0/24"); !slices.Equal(got, []string{"proto 78 via 192.168.1.12 dev eth0"}) {
		t.Errorf("after the take-over: %q, want our route alone", got)
	}
	if err := installIn(t, ns, Route{Dst: netip.MustParsePrefix("10.244.3.0/24"), Gw: gw}); !errors.Is(err, errForeignRoute) {
		t.Errorf("installing over a static route: %v, want errForeignRoute", err)
	}
	if got := routesOf(t, h, "10.244.3.0/24"); !slices.Equal(got, []string{"proto 4 via 192.168.1.12 dev eth0"}) {
		t.Errorf("the static route became %q", got)
	}
}

// TestKernelTakesOverKubeRouterTunnels: kube-router's ipip tunnel to a node
// gives way to ours (the kernel allows one per pair of endpoints); another
// tunnel with the same endpoints but not kube-router's name does not.
func TestKernelTakesOverKubeRouterTunnels(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	h := kerneltest.Handle(t, ns)
	kerneltest.AddDummy(t, h, "eth0")
	kerneltest.LinkUp(t, h, "eth0", "192.168.1.10/24")
	for name, remote := range map[string]net.IP{"tun-0123456789a": net.IPv4(192, 168, 2, 20), "foreign0": net.IPv4(192, 168, 3, 30)} {
		err := h.LinkAdd(&netlink.Iptun{LinkAttrs: netlink.LinkAttrs{Name: name}, Local: net.IPv4(192, 168, 1, 10), Remote: remote, Ttl: 64, PMtuDisc: 1})
		if err != nil {
			kerneltest.MissingFeature(t, "ipip tunnels", err)
		}
		l, _ := h.LinkByName(name)
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		_, n, _ := net.ParseCIDR(map[string]string{"tun-0123456789a": "10.244.2.0/24", "foreign0": "10.244.3.0/24"}[name])
		if err := h.RouteAdd(&netlink.Route{Dst: n, LinkIndex: l.Attrs().Index, Scope: netlink.SCOPE_LINK, Protocol: KubeRouterRouteProtocol}); err != nil {
			t.Fatal(err)
		}
	}
	r := Route{Dst: netip.MustParsePrefix("10.244.2.0/24"), Tunnel: TunnelPrefix + "c0a80214", TunnelRemote: netip.MustParseAddr("192.168.2.20")}
	if err := installIn(t, ns, r); err != nil {
		t.Errorf("taking over kube-router's tunnel: %v", err)
	}
	if got := routesOf(t, h, "10.244.2.0/24"); !slices.Equal(got, []string{"proto 78 via <nil> dev nfr-c0a80214"}) {
		t.Errorf("after the take-over: %q", got)
	}
	if _, err := h.LinkByName("tun-0123456789a"); err == nil {
		t.Error("kube-router's tunnel is still there")
	}
	r = Route{Dst: netip.MustParsePrefix("10.244.3.0/24"), Tunnel: TunnelPrefix + "c0a8031e", TunnelRemote: netip.MustParseAddr("192.168.3.30")}
	if err := installIn(t, ns, r); err == nil {
		t.Error("a foreign tunnel with the same endpoints gave way")
	}
	if _, err := h.LinkByName("foreign0"); err != nil {
		t.Errorf("the foreign tunnel is gone: %v", err)
	}
}
