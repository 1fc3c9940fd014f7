// Package netnstest builds CNI layouts in network namespaces for kernel-tier
// tests: a node namespace, and pod namespaces each joined to it by a veth
// pair. The default is the routed layout: /32 (/128) routes to the pods on
// the node side and a default route to a link-local gateway on the pod side
// (Calico's layout). NewBridgeNode builds the bridge layout instead: the
// node-side veths are ports of a bridge named kube-bridge that holds the
// gateway address of each pod CIDR, and pods are addressed inside the CIDRs
// (kube-router's and the bridge plugin's layout).
// Everything is made by the test, torn down when it ends, and works the same
// on the host and in the VM tier (it uses netlink only, no tools).
package netnstest

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Gateways the pods route through; the node side of every veth owns them.
var (
	Gateway4 = netip.MustParseAddr("169.254.1.1")
	Gateway6 = netip.MustParseAddr("fe80::1")
)

// BridgeName is the bridge of the bridge layout, named as kube-router names it.
const BridgeName = "kube-bridge"

// Node is a node namespace.
type Node struct {
	t      testing.TB
	NS     netns.NsHandle
	h      *netlink.Handle
	nextIf int
	// bridge and cidrs are set in the bridge layout only.
	bridge netlink.Link
	cidrs  []netip.Prefix
}

// Pod is a pod namespace attached to a node.
type Pod struct {
	Name string
	NS   netns.NsHandle
	IPs  []netip.Addr
	Veth string // node-side interface
}

// NewNode makes a node namespace with forwarding on for IPv4 and IPv6.
func NewNode(t testing.TB) *Node {
	t.Helper()
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle in node namespace: %v", err)
	}
	t.Cleanup(h.Close)
	n := &Node{t: t, NS: ns, h: h}
	err = kerneltest.Do(ns, func() error {
		for _, f := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
			if err := os.WriteFile(f, []byte("1"), 0o644); err != nil {
				return err
			}
		}
		// Probes open thousands of short connections; conntrack keeps each
		// in TIME_WAIT for two minutes, which fills a small guest's table
		// (sized from its memory) and drops new connections. One second is
		// plenty for connections that are over.
		err := os.WriteFile("/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_time_wait", []byte("1"), 0o644)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("enable forwarding: %v", err)
	}
	return n
}

// NewBridgeNode makes a node namespace in the bridge layout: a bridge named
// kube-bridge, up, holding the first address of each pod CIDR as the pods'
// gateway. Pods added to it must have addresses inside the CIDRs.
func NewBridgeNode(t testing.TB, cidrs ...netip.Prefix) *Node {
	t.Helper()
	n := NewNode(t)
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}}
	if err := n.h.LinkAdd(br); err != nil {
		t.Fatalf("add bridge %s: %v", BridgeName, err)
	}
	link, err := n.h.LinkByName(BridgeName)
	if err != nil {
		t.Fatalf("bridge %s: %v", BridgeName, err)
	}
	for _, c := range cidrs {
		c = c.Masked()
		if err := n.h.AddrAdd(link, kerneltest.Addr(c.Addr().Next(), c.Bits())); err != nil {
			t.Fatalf("bridge %s: gateway of %s: %v", BridgeName, c, err)
		}
	}
	if err := n.h.LinkSetUp(link); err != nil {
		t.Fatalf("bridge %s up: %v", BridgeName, err)
	}
	n.bridge, n.cidrs = link, cidrs
	return n
}

// cidrOf returns the pod CIDR of the bridge layout that holds ip.
func (n *Node) cidrOf(ip netip.Addr) (netip.Prefix, bool) {
	for _, c := range n.cidrs {
		if c.Contains(ip) {
			return c.Masked(), true
		}
	}
	return netip.Prefix{}, false
}

// AddPod makes a pod namespace with the given addresses, routed through the
// node or, in the bridge layout, on its bridge.
func (n *Node) AddPod(name string, ips ...netip.Addr) *Pod {
	if n.bridge != nil {
		return n.addBridgedPod(name, ips)
	}
	t := n.t
	t.Helper()
	pns := kerneltest.NewNetNS(t)
	n.nextIf++
	p := &Pod{Name: name, NS: pns, IPs: ips, Veth: fmt.Sprintf("veth%d", n.nextIf)}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.Veth}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(pns))}
	if err := n.h.LinkAdd(veth); err != nil {
		t.Fatalf("pod %s: add veth: %v", name, err)
	}
	host, err := n.h.LinkByName(p.Veth)
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("pod %s: %s: %v", name, what, err)
		}
	}
	must("node veth gateway v4", n.h.AddrAdd(host, kerneltest.Addr(Gateway4, 32)))
	must("node veth gateway v6", n.h.AddrAdd(host, kerneltest.Addr(Gateway6, 64)))
	must("node veth up", n.h.LinkSetUp(host))
	for _, ip := range ips {
		must("route to pod", n.h.RouteAdd(&netlink.Route{LinkIndex: host.Attrs().Index, Dst: kerneltest.HostNet(ip), Scope: netlink.SCOPE_LINK}))
	}
	ph, err := netlink.NewHandleAt(pns)
	must("netlink handle in pod namespace", err)
	defer ph.Close()
	eth, err := ph.LinkByName("eth0")
	must("pod eth0", err)
	for _, ip := range ips {
		must("pod address", ph.AddrAdd(eth, kerneltest.Addr(ip, ip.BitLen())))
	}
	must("pod eth0 up", ph.LinkSetUp(eth))
	idx := eth.Attrs().Index
	must("pod route to gateway", ph.RouteAdd(&netlink.Route{LinkIndex: idx, Dst: kerneltest.HostNet(Gateway4), Scope: netlink.SCOPE_LINK}))
	must("pod default route v4", ph.RouteAdd(&netlink.Route{LinkIndex: idx, Gw: net.IP(Gateway4.AsSlice()),
		Dst: &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}}))
	must("pod default route v6", ph.RouteAdd(&netlink.Route{LinkIndex: idx, Gw: net.IP(Gateway6.AsSlice()),
		Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}}))
	return p
}

// addBridgedPod makes a pod whose veth is a port of the node's bridge, with
// its addresses inside the pod CIDRs and default routes to their gateways.
func (n *Node) addBridgedPod(name string, ips []netip.Addr) *Pod {
	t := n.t
	t.Helper()
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("pod %s: %s: %v", name, what, err)
		}
	}
	pns := kerneltest.NewNetNS(t)
	n.nextIf++
	p := &Pod{Name: name, NS: pns, IPs: ips, Veth: fmt.Sprintf("veth%d", n.nextIf)}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.Veth, MasterIndex: n.bridge.Attrs().Index},
		PeerName: "eth0", PeerNamespace: netlink.NsFd(int(pns))}
	must("add veth", n.h.LinkAdd(veth))
	host, err := n.h.LinkByName(p.Veth)
	must("node veth", err)
	must("node veth up", n.h.LinkSetUp(host))
	ph, err := netlink.NewHandleAt(pns)
	must("netlink handle in pod namespace", err)
	defer ph.Close()
	eth, err := ph.LinkByName("eth0")
	must("pod eth0", err)
	var cidrs []netip.Prefix
	for _, ip := range ips {
		c, ok := n.cidrOf(ip)
		if !ok {
			t.Fatalf("pod %s: address %s is in no pod CIDR of the bridge (%v)", name, ip, n.cidrs)
		}
		must("pod address", ph.AddrAdd(eth, kerneltest.Addr(ip, c.Bits())))
		cidrs = append(cidrs, c)
	}
	must("pod eth0 up", ph.LinkSetUp(eth))
	for _, c := range cidrs {
		must("pod default route", ph.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.IP(c.Addr().Next().AsSlice()),
			Dst: &net.IPNet{IP: make(net.IP, c.Addr().BitLen()/8), Mask: net.CIDRMask(0, c.Addr().BitLen())}}))
	}
	return p
}
