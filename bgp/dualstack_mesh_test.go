package bgp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// route6 describes node n's route to dst: "proto N via GW", or "" when there
// is none.
func (n *testNode) route6(t testing.TB, dst netip.Prefix) string {
	t.Helper()
	rs, err := n.h.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Dst: ipNet(dst), Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_DST|netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatalf("%s: list routes to %s: %v", n.name, dst, err)
	}
	if len(rs) == 0 {
		return ""
	}
	return fmt.Sprintf("proto %d via %s", rs[0].Protocol, rs[0].Gw)
}

// TestDualStackMeshRoutesIPv6Pods: three dual-stack nodes peer once per
// family; each installs the others' IPv6 pod CIDRs via their IPv6
// addresses (protocol RouteProtocol) next to the IPv4 ones, pods reach each
// other over IPv6 and IPv4, and a departed node's routes of both families
// are removed.
func TestDualStackMeshRoutesIPv6Pods(t *testing.T) {
	m := newDualStackMesh(t, 3)
	start := time.Now()
	for _, n := range m.nodes {
		m.start(n, childConfig{})
	}
	converged := func(nodes []*testNode) bool {
		for _, a := range nodes {
			for _, b := range nodes {
				if a != b && (!a.hasRoute(t, b.cidr, b.addr) || !a.hasRoute(t, b.cidr6, b.addr6)) {
					return false
				}
			}
		}
		return true
	}
	waitFor(t, 30*time.Second, "dual-stack mesh converged", func() bool { return converged(m.nodes) })
	t.Logf("MEASURE: 3-node dual-stack mesh converged %s after the routers started", time.Since(start).Round(time.Millisecond))

	for _, a := range m.nodes {
		for _, b := range m.nodes {
			if a == b {
				continue
			}
			if got, want := a.route6(t, b.cidr6), fmt.Sprintf("proto %d via %s", RouteProtocol, b.addr6); got != want {
				t.Errorf("%s: route to %s: %q, want %q", a.name, b.cidr6, got, want)
			}
			for _, peer := range []netip.Addr{b.addr, b.addr6} {
				if !a.sessionEstablished(t, peer) {
					t.Errorf("%s: no established session to %s", a.name, peer)
				}
			}
			for _, dst := range b.pod.IPs {
				if !a.pod.ProbeWithin(t, "tcp", dst, 8080, netnstest.AllowedTimeout) {
					t.Errorf("%s cannot reach %s at %s", a.pod.Name, b.pod.Name, dst)
				}
			}
		}
	}

	t.Run("departed node's routes of both families removed", func(t *testing.T) {
		n1, n2, n3 := m.nodes[0], m.nodes[1], m.nodes[2]
		m.state.Nodes = m.state.Nodes[:2]
		m.children[n1.name].send(m.state)
		m.children[n2.name].send(m.state)
		m.children[n3.name].stop()
		m.children[n3.name] = nil
		waitFor(t, 30*time.Second, "node3's routes gone", func() bool {
			for _, n := range []*testNode{n1, n2} {
				if n.hasRoute(t, n3.cidr, netip.Addr{}) || n.hasRoute(t, n3.cidr6, netip.Addr{}) {
					return false
				}
			}
			return true
		})
		if !converged(m.nodes[:2]) {
			t.Error("the remaining nodes lost routes")
		}
		if !n1.pod.ProbeWithin(t, "tcp", n2.pod.IPs[1], 8080, netnstest.AllowedTimeout) {
			t.Error("node1's pod cannot reach node2's over IPv6 any more")
		}
	})
}

// TestBIRDInteropDualStack peers two dual-stack nodes with BIRD 2 over both
// families, one session per family as routers are usually set up: BIRD
// learns each node's IPv6 pod CIDR via the node's IPv6 address, the nodes
// install BIRD's IPv6 route (protocol RouteProtocol, via BIRD's IPv6
// address) and refuse its route to node1's IPv6 pod CIDR (the import policy
// holds IPv6 cluster prefixes too).
func TestBIRDInteropDualStack(t *testing.T) {
	kerneltest.RequireRoot(t)
	requireBIRD(t)
	m := newDualStackMesh(t, 2)
	n1, n2 := m.nodes[0], m.nodes[1]
	upstream, upstream6 := netip.MustParseAddr("10.0.0.254"), netip.MustParseAddr("fd00:0:1::fe")
	birdNS := kerneltest.NewNetNS(t)
	plug(t, m.sw, "portbird", birdNS, netip.PrefixFrom(upstream, 24), netip.PrefixFrom(upstream6, 64))
	show := startBIRD(t, birdNS, `router id 10.0.0.254;
protocol device {}
protocol static { ipv4; route 192.0.2.0/24 unreachable; }
protocol static { ipv6; route 2001:db8:1::/48 unreachable; route fd00:244:1::/64 unreachable; }
template bgp node4 { local 10.0.0.254 as 65000; ipv4 { import all; export all; }; }
template bgp node6 { local fd00:0:1::fe as 65000; ipv6 { import all; export all; }; }
protocol bgp n1 from node4 { neighbor 10.0.0.1 as 64512; }
protocol bgp n2 from node4 { neighbor 10.0.0.2 as 64512; }
protocol bgp n1v6 from node6 { neighbor fd00:0:1::1 as 64512; }
protocol bgp n2v6 from node6 { neighbor fd00:0:1::2 as 64512; }
`)
	cfg := childConfig{PeerRouters: []ExternalPeer{{Addr: upstream, ASN: 65000}, {Addr: upstream6, ASN: 65000}}}
	// node2 alone first (node1 dials it when it starts, node2 only waits
	// for node1): BIRD's path is then node2's only path to node1's IPv6 pod
	// CIDR (an eBGP path that would lose to node1's iBGP one on AS path
	// length, so only now does the import policy show). BIRD sends that path
	// in the UPDATE that carries 2001:db8:1::/48 (same attributes), and the
	// router applies one UPDATE's paths together: once the latter is
	// routed, the former would be too.
	m.start(n2, cfg)
	waitFor(t, 30*time.Second, "node2 installs BIRD's IPv6 route", func() bool {
		return n2.hasRoute(t, netip.MustParsePrefix("2001:db8:1::/48"), upstream6)
	})
	if got, want := n2.route6(t, netip.MustParsePrefix("2001:db8:1::/48")), fmt.Sprintf("proto %d via %s", RouteProtocol, upstream6); got != want {
		t.Errorf("node2's route to BIRD's prefix: %q, want %q", got, want)
	}
	if got := n2.route6(t, n1.cidr6); got != "" {
		t.Errorf("node2 took BIRD's path to node1's IPv6 pod CIDR: %s", got)
	}
	m.start(n1, cfg)
	via := func(prefix string, hops ...string) func() bool { return birdVia(show, prefix, hops...) }
	waitFor(t, 30*time.Second, "BIRD learns node1's IPv6 pod CIDR via node1's IPv6 address", via("fd00:244:1::/64", "fd00:0:1::1"))
	waitFor(t, 30*time.Second, "BIRD learns node2's IPv6 pod CIDR via node2's IPv6 address", via("fd00:244:2::/64", "fd00:0:1::2"))
	waitFor(t, 30*time.Second, "BIRD learns node1's IPv4 pod CIDR via node1", via("10.244.1.0/24", "10.0.0.1"))
	waitFor(t, 30*time.Second, "node2 routes node1's IPv6 pod CIDR via node1", func() bool {
		return n2.hasRoute(t, n1.cidr6, n1.addr6)
	})
	if out := show("fd00:244:1::/64"); strings.Contains(out, "via fd00:0:1::2") {
		t.Errorf("node2 re-advertised node1's IPv6 pod CIDR to BIRD:\n%s", out)
	}
	if !n2.pod.ProbeWithin(t, "tcp", n1.pod.IPs[1], 8080, netnstest.AllowedTimeout) {
		t.Error("pods do not reach each other over IPv6")
	}
}
