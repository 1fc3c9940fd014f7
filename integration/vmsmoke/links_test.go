package vmsmoke

import (
	"net"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// TestDummyAddresses holds service addresses on a dummy interface, as the
// IPVS proxy does.
func TestDummyAddresses(t *testing.T) {
	kerneltest.RequireRoot(t)
	h := kerneltest.Handle(t, kerneltest.NewNetNS(t))
	addLink(t, h, &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "nfr-vip"}})
	link, err := h.LinkByName("nfr-vip")
	if err != nil {
		t.Fatalf("read dummy back: %v", err)
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatalf("set dummy up: %v", err)
	}
	want := []string{"10.96.0.10/32", "10.96.0.11/32", "fd00:96::10/128"}
	for _, a := range want {
		addr, err := netlink.ParseAddr(a)
		if err != nil {
			t.Fatal(err)
		}
		addr.Flags = unix.IFA_F_NODAD
		if err := h.AddrAdd(link, addr); err != nil {
			t.Fatalf("add %s: %v", a, err)
		}
	}
	addrs, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatalf("list addresses: %v", err)
	}
	var got []string
	for _, a := range addrs {
		if a.IP.IsGlobalUnicast() {
			got = append(got, a.IPNet.String())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("addresses read back as %v, want %v", got, want)
	}
}

// TestIPIPTunnel makes an ipip tunnel and routes a remote pod CIDR through
// it, as the routing backend does for nodes in other subnets.
func TestIPIPTunnel(t *testing.T) {
	kerneltest.RequireRoot(t)
	h := kerneltest.Handle(t, kerneltest.NewNetNS(t))
	local, remote := net.ParseIP("192.0.2.1").To4(), net.ParseIP("192.0.2.2").To4()
	addLink(t, h, &netlink.Iptun{LinkAttrs: netlink.LinkAttrs{Name: "nfr-tun"}, Local: local, Remote: remote, Ttl: 64})
	link, err := h.LinkByName("nfr-tun")
	if err != nil {
		t.Fatalf("read tunnel back: %v", err)
	}
	tun, ok := link.(*netlink.Iptun)
	if !ok || link.Type() != "ipip" {
		t.Fatalf("tunnel read back as %T type %q, want *netlink.Iptun type ipip", link, link.Type())
	}
	if !tun.Local.Equal(local) || !tun.Remote.Equal(remote) || tun.Ttl != 64 {
		t.Errorf("tunnel read back with local %s remote %s ttl %d, want %s %s 64", tun.Local, tun.Remote, tun.Ttl, local, remote)
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatalf("set tunnel up: %v", err)
	}
	_, podCIDR, _ := net.ParseCIDR("10.244.2.0/24")
	route := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: podCIDR, Scope: netlink.SCOPE_LINK}
	if err := h.RouteAdd(route); err != nil {
		t.Fatalf("route %s through tunnel: %v", podCIDR, err)
	}
	routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{LinkIndex: link.Attrs().Index}, netlink.RT_FILTER_OIF)
	if err != nil {
		t.Fatalf("list routes: %v", err)
	}
	if !slices.ContainsFunc(routes, func(r netlink.Route) bool { return r.Dst != nil && r.Dst.String() == podCIDR.String() }) {
		t.Errorf("routes through the tunnel %v lack %s", routes, podCIDR)
	}
}
