package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// Deadlines for the overlay test. They are generous because the VM tier
// runs it under software emulation; the test waits on conditions and
// returns as soon as they hold.
const (
	overlayConverge = 90 * time.Second
	overlayReach    = 30 * time.Second
)

// newOverlayMesh makes node1 and node2 on subnet 10.0.1.0/24 and node3 on
// 10.0.2.0/24, joined by a fabric that routes between the subnets but knows
// no pod CIDR.
func newOverlayMesh(t *testing.T) *mesh {
	f := newFabric(t)
	f.addSubnet("bra", netip.MustParsePrefix("10.0.1.254/24"))
	f.addSubnet("brb", netip.MustParsePrefix("10.0.2.254/24"))
	m := &mesh{t: t, children: map[string]*child{}}
	for i, at := range []struct{ br, addr, gw string }{
		{"bra", "10.0.1.1/24", "10.0.1.254"},
		{"bra", "10.0.1.2/24", "10.0.1.254"},
		{"brb", "10.0.2.1/24", "10.0.2.254"},
	} {
		name := fmt.Sprintf("node%d", i+1)
		addr := netip.MustParsePrefix(at.addr)
		cidr := netip.MustParsePrefix(fmt.Sprintf("10.244.%d.0/24", i+1))
		n := newTestNode(t, name, addr, cidr)
		f.attach(n, at.br, addr, netip.MustParseAddr(at.gw))
		m.nodes = append(m.nodes, n)
		m.state.Nodes = append(m.state.Nodes, &model.Node{Name: name, InternalIPs: []netip.Addr{addr.Addr()}, PodCIDRs: []netip.Prefix{cidr}})
	}
	return m
}

// TestOverlayRoutesPodsAcrossSubnets runs the router with --enable-overlay:
// pods of nodes on different subnets reach each other through ipip tunnels
// (the fabric between the subnets drops pod addresses), nodes on one subnet
// route directly unless --overlay-type=full, and a departed node's routes
// and tunnels are removed; a netlink monitor on node1 sees one route
// operation per best-path event.
func TestOverlayRoutesPodsAcrossSubnets(t *testing.T) {
	kerneltest.RequireRoot(t)
	requireIPIP(t)
	for _, typ := range []string{OverlaySubnet, OverlayFull} {
		t.Run(typ, func(t *testing.T) {
			m := newOverlayMesh(t)
			n1, n2, n3 := m.nodes[0], m.nodes[1], m.nodes[2]
			// want[a][b] is how node a must route node b's pod CIDR.
			want := map[*testNode]map[*testNode]string{}
			for _, a := range m.nodes {
				want[a] = map[*testNode]string{}
				for _, b := range m.nodes {
					if a != b {
						want[a][b] = viaTunnel(a.addr, b.addr)
					}
				}
			}
			if typ == OverlaySubnet {
				want[n1][n2] = "via " + n2.addr.String()
				want[n2][n1] = "via " + n1.addr.String()
			}
			ops := watchRouteOps(t, n1.ns.NS)
			start := time.Now()
			for _, n := range m.nodes {
				m.start(n, childConfig{Overlay: true, OverlayType: typ})
			}
			routed := func(nodes ...*testNode) func() bool {
				return func() bool {
					for _, a := range nodes {
						for _, b := range nodes {
							if a != b && a.routeVia(t, b.cidr) != want[a][b] {
								return false
							}
						}
					}
					return true
				}
			}
			if !tryFor(overlayConverge, routed(m.nodes...)) {
				for _, a := range m.nodes {
					for _, b := range m.nodes {
						if got := a.routeVia(t, b.cidr); a != b && got != want[a][b] {
							t.Errorf("%s routes %s %q, want %q", a.name, b.cidr, got, want[a][b])
						}
					}
				}
				t.FailNow()
			}
			t.Logf("MEASURE: 3 nodes on 2 subnets routed (overlay %s) %s after the routers started", typ, time.Since(start).Round(time.Millisecond))

			for _, a := range m.nodes {
				for _, b := range m.nodes {
					if a == b {
						continue
					}
					if !tryFor(overlayReach, func() bool { return a.pod.Probe(t, "tcp", b.pod.IPs[0], 8080) }) {
						t.Errorf("%s cannot reach %s (%s routes %s %q)", a.pod.Name, b.pod.Name, a.name, b.cidr, want[a][b])
					}
				}
			}

			// Notifications trail the routes a dump shows: wait for them.
			ops.await(t, overlayConverge, n2.cidr, "add")
			ops.await(t, overlayConverge, n3.cidr, "add")
			ops.expect(t, map[netip.Prefix][]string{n2.cidr: {"add"}, n3.cidr: {"add"}})

			// A node leaves: the others drop its route and their tunnel to
			// it, with one route operation each. With the full overlay the
			// leaver shares node1's subnet, so that a route re-planned
			// before its withdrawal would show as a replace (a direct route
			// for a node no longer known).
			leaver, stay := n3, n2
			if typ == OverlayFull {
				leaver, stay = n2, n3
			}
			m.state.Nodes = slices.DeleteFunc(m.state.Nodes, func(mn *model.Node) bool { return mn.Name == leaver.name })
			m.children[n1.name].send(m.state)
			m.children[stay.name].send(m.state)
			m.children[leaver.name].stop()
			m.children[leaver.name] = nil
			gone := func() bool {
				for _, n := range []*testNode{n1, stay} {
					if n.routeVia(t, leaver.cidr) != "" {
						return false
					}
					if _, err := n.h.LinkByName(TunnelName(leaver.addr)); err == nil {
						return false
					}
				}
				return true
			}
			if !tryFor(overlayConverge, gone) {
				t.Fatalf("%s's route or tunnel still on node1 (%q) or %s (%q)", leaver.name, n1.routeVia(t, leaver.cidr), stay.name, stay.routeVia(t, leaver.cidr))
			}
			ops.await(t, overlayConverge, leaver.cidr, "del")
			ops.expect(t, map[netip.Prefix][]string{leaver.cidr: {"add", "del"}, stay.cidr: {"add"}})
			if !routed(n1, stay)() {
				t.Errorf("node1 and %s lost their routes to each other: %q, %q", stay.name, n1.routeVia(t, stay.cidr), stay.routeVia(t, n1.cidr))
			}
		})
	}
}

// tryFor polls cond until it holds (true) or timeout passes (false), for
// callers that report the failure themselves.
func tryFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}
