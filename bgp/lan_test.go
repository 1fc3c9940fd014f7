package bgp

import (
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// testNode is a node namespace on a test LAN with one pod.
type testNode struct {
	name string
	addr netip.Addr
	cidr netip.Prefix
	// addr6 and cidr6 are set on a dual-stack node.
	addr6 netip.Addr
	cidr6 netip.Prefix
	ns    *netnstest.Node
	h     *netlink.Handle
	pod   *netnstest.Pod
}

// newSwitch makes a namespace with a bridge that nodes plug into.
func newSwitch(t *testing.T) *netlink.Handle {
	t.Helper()
	ns := kerneltest.NewNetNS(t)
	h := kerneltest.Handle(t, ns)
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	if err := h.LinkAdd(br); err != nil {
		t.Fatalf("add bridge: %v", err)
	}
	if err := h.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}
	return h
}

// plug connects namespace ns to the switch as eth0 with addresses addrs.
func plug(t *testing.T, sw *netlink.Handle, port string, ns netns.NsHandle, addrs ...netip.Prefix) {
	t.Helper()
	plugInto(t, sw, "br0", port, ns, addrs...)
}

// plugInto connects namespace ns to bridge of the switch sw as eth0 with
// addresses addrs.
func plugInto(t *testing.T, sw *netlink.Handle, bridge, port string, ns netns.NsHandle, addrs ...netip.Prefix) {
	t.Helper()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}
	if err := sw.LinkAdd(veth); err != nil {
		t.Fatalf("add veth %s: %v", port, err)
	}
	br, err := sw.LinkByName(bridge)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sw.LinkByName(port)
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.LinkSetMaster(l, br); err != nil {
		t.Fatal(err)
	}
	if err := sw.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	h := kerneltest.Handle(t, ns)
	eth, err := h.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range addrs {
		if err := h.AddrAdd(eth, nodadAddr(addr)); err != nil {
			t.Fatalf("add %s: %v", addr, err)
		}
	}
	if err := h.LinkSetUp(eth); err != nil {
		t.Fatal(err)
	}
}

// nodadAddr is addr for AddrAdd, without duplicate address detection: a
// tentative IPv6 address cannot be used for a second or so.
func nodadAddr(addr netip.Prefix) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: addr.Addr().AsSlice(), Mask: net.CIDRMask(addr.Bits(), addr.Addr().BitLen())}, Flags: unix.IFA_F_NODAD}
}

// newTestNode makes node name at addr with pod CIDR cidr (and the further
// pod CIDRs more) and a pod at address .10 of each CIDR.
func newTestNode(t *testing.T, name string, addr netip.Prefix, cidr netip.Prefix, more ...netip.Prefix) *testNode {
	t.Helper()
	n := &testNode{name: name, addr: addr.Addr(), cidr: cidr, ns: netnstest.NewNode(t)}
	n.h = kerneltest.Handle(t, n.ns.NS)
	var podIPs []netip.Addr
	for _, c := range append([]netip.Prefix{cidr}, more...) {
		ip := c.Masked().Addr()
		for range 10 {
			ip = ip.Next()
		}
		podIPs = append(podIPs, ip)
	}
	n.pod = n.ns.AddPod("pod-"+name, podIPs...)
	// Pods answer on 8080 with their name.
	n.pod.Serve(t, "tcp", 8080)
	return n
}

// ourRoutes lists the routes with RouteProtocol in the node's main table.
func (n *testNode) ourRoutes(t testing.TB) map[netip.Prefix]netlink.Route {
	t.Helper()
	rs, err := n.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatalf("list routes of %s: %v", n.name, err)
	}
	out := map[netip.Prefix]netlink.Route{}
	for _, r := range rs {
		if p, ok := prefixFromIPNet(r.Dst); ok {
			out[p] = r
		}
	}
	return out
}

// hasRoute reports whether the node has our route to dst via gw.
func (n *testNode) hasRoute(t testing.TB, dst netip.Prefix, gw netip.Addr) bool {
	r, ok := n.ourRoutes(t)[dst]
	if !ok {
		return false
	}
	got, _ := netip.AddrFromSlice(r.Gw)
	return !gw.IsValid() || got.Unmap() == gw
}

// sessionEstablished reports whether the node has an established TCP
// connection from its address of peer's family to peer's BGP port, read
// from the node's /proc/net/tcp or tcp6.
func (n *testNode) sessionEstablished(t testing.TB, peer netip.Addr) bool {
	var found bool
	local, file := n.addr, "/proc/thread-self/net/tcp"
	if peer.Is6() {
		local, file = n.addr6, "/proc/thread-self/net/tcp6"
	}
	err := kerneltest.Do(n.ns.NS, func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		found = tcpEstablished(string(b), local, peer, DefaultPort)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
