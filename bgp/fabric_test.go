package bgp

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// fabric is a routed network between subnets: one namespace that forwards
// between a bridge per subnet and owns each subnet's gateway address. It
// knows no pod CIDR, so pod traffic between nodes of different subnets
// crosses it only inside a tunnel.
type fabric struct {
	t *testing.T
	h *netlink.Handle
}

func newFabric(t *testing.T) *fabric {
	t.Helper()
	ns := netnstest.NewNode(t) // a namespace with forwarding on
	h := kerneltest.Handle(t, ns.NS)
	return &fabric{t: t, h: h}
}

// addSubnet makes bridge br with the subnet's gateway address gw on it.
func (f *fabric) addSubnet(br string, gw netip.Prefix) {
	f.t.Helper()
	b := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: br}}
	if err := f.h.LinkAdd(b); err != nil {
		f.t.Fatalf("add bridge %s: %v", br, err)
	}
	if err := f.h.AddrAdd(b, &netlink.Addr{IPNet: ipNet(gw)}); err != nil {
		f.t.Fatalf("gateway %s on %s: %v", gw, br, err)
	}
	if err := f.h.LinkSetUp(b); err != nil {
		f.t.Fatal(err)
	}
}

// attach plugs node n into bridge br at addr with a default route via gw.
func (f *fabric) attach(n *testNode, br string, addr netip.Prefix, gw netip.Addr) {
	f.t.Helper()
	plugInto(f.t, f.h, br, "port"+n.name, n.ns.NS, addr)
	eth, err := n.h.LinkByName("eth0")
	if err != nil {
		f.t.Fatal(err)
	}
	def := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw.AsSlice(), Dst: &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}}
	if err := n.h.RouteAdd(def); err != nil {
		f.t.Fatalf("%s: default route via %s: %v", n.name, gw, err)
	}
}

// requireIPIP ends the test when the kernel cannot make ipip tunnels (a skip
// on the host, a failure in a VM guest), trying in a namespace of its own.
func requireIPIP(t *testing.T) {
	t.Helper()
	ns := kerneltest.NewNetNS(t)
	h := kerneltest.Handle(t, ns)
	probe := &netlink.Iptun{LinkAttrs: netlink.LinkAttrs{Name: "ipipprobe"},
		Local: net.IPv4(192, 0, 2, 1), Remote: net.IPv4(192, 0, 2, 2)}
	if err := h.LinkAdd(probe); err != nil {
		kerneltest.MissingFeature(t, "ipip tunnels", err)
	}
}

// routeVia describes how n routes dst with a route of ours: "via GW",
// "dev TUNNEL local A remote B" (an ipip tunnel), or "" for no route.
func (n *testNode) routeVia(t testing.TB, dst netip.Prefix) string {
	t.Helper()
	r, ok := n.ourRoutes(t)[dst]
	if !ok {
		return ""
	}
	if r.Gw != nil {
		return "via " + r.Gw.String()
	}
	l, err := n.h.LinkByIndex(r.LinkIndex)
	if err != nil {
		return fmt.Sprintf("dev index %d (%v)", r.LinkIndex, err)
	}
	tun, ok := l.(*netlink.Iptun)
	if !ok {
		return fmt.Sprintf("dev %s (%s, not ipip)", l.Attrs().Name, l.Type())
	}
	return fmt.Sprintf("dev %s local %s remote %s", tun.Name, tun.Local, tun.Remote)
}

// viaTunnel is what routeVia says of a route from node at local through our
// tunnel to remote.
func viaTunnel(local, remote netip.Addr) string {
	return fmt.Sprintf("dev %s local %s remote %s", TunnelName(remote), local, remote)
}
