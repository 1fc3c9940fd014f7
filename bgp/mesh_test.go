package bgp

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// mesh is three nodes on one LAN, each with a pod and a router process.
type mesh struct {
	t        *testing.T // the test the router processes live as long as
	sw       *netlink.Handle
	nodes    []*testNode
	children map[string]*child
	state    childState
}

func newMesh(t *testing.T, n int) *mesh { return buildMesh(t, n, false) }

// newDualStackMesh makes n dual-stack nodes on one LAN: node i at 10.0.0.i/24
// and fd00:0:1::i/64 with pod CIDRs 10.244.i.0/24 and fd00:244:i::/64, and a
// pod at .10 of each.
func newDualStackMesh(t *testing.T, n int) *mesh { return buildMesh(t, n, true) }

func buildMesh(t *testing.T, n int, dualStack bool) *mesh {
	kerneltest.RequireRoot(t)
	sw := newSwitch(t)
	m := &mesh{t: t, sw: sw, children: map[string]*child{}}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node%d", i)
		addrs := []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.0.0.%d/24", i))}
		cidrs := []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.244.%d.0/24", i))}
		if dualStack {
			addrs = append(addrs, netip.MustParsePrefix(fmt.Sprintf("fd00:0:1::%d/64", i)))
			cidrs = append(cidrs, netip.MustParsePrefix(fmt.Sprintf("fd00:244:%d::/64", i)))
		}
		tn := newTestNode(t, name, addrs[0], cidrs[0], cidrs[1:]...)
		if dualStack {
			tn.addr6, tn.cidr6 = addrs[1].Addr(), cidrs[1]
		}
		plug(t, sw, "port"+name, tn.ns.NS, addrs...)
		m.nodes = append(m.nodes, tn)
		node := &model.Node{Name: name, PodCIDRs: cidrs}
		for _, a := range addrs {
			node.InternalIPs = append(node.InternalIPs, a.Addr())
		}
		m.state.Nodes = append(m.state.Nodes, node)
	}
	return m
}

func (m *mesh) start(n *testNode, cfg childConfig) {
	cfg.Node = n.name
	c := startChild(m.t, n.ns.NS, cfg)
	m.children[n.name] = c
	c.send(m.state)
}

// converged reports whether every running node routes every other node's pod
// CIDR via that node.
func (m *mesh) converged(t *testing.T) bool {
	for _, a := range m.nodes {
		if m.children[a.name] == nil {
			continue
		}
		for _, b := range m.nodes {
			if a != b && m.children[b.name] != nil && !a.hasRoute(t, b.cidr, b.addr) {
				return false
			}
		}
	}
	return true
}

func (m *mesh) reachAll(t *testing.T) {
	t.Helper()
	for _, a := range m.nodes {
		for _, b := range m.nodes {
			if a != b && !a.pod.Probe(t, "tcp", b.pod.IPs[0], 8080) {
				t.Errorf("%s cannot reach %s", a.pod.Name, b.pod.Name)
			}
		}
	}
}

func TestMeshRoutesPodsAndSurvivesRestartAndDeparture(t *testing.T) {
	m := newMesh(t, 3)
	cfg := childConfig{GracefulRestart: true}
	start := time.Now()
	for _, n := range m.nodes {
		m.start(n, cfg)
	}
	waitFor(t, 30*time.Second, "3-node mesh converged", func() bool { return m.converged(t) })
	t.Logf("MEASURE: 3-node mesh converged %s after the routers started", time.Since(start).Round(time.Millisecond))
	m.reachAll(t)

	n1, n2, n3 := m.nodes[0], m.nodes[1], m.nodes[2]

	t.Run("route removed by hand comes back", func(t *testing.T) {
		r := n1.ourRoutes(t)[n2.cidr]
		if err := n1.h.RouteDel(&r); err != nil {
			t.Fatal(err)
		}
		d := waitFor(t, 10*time.Second, "route restored", func() bool { return n1.hasRoute(t, n2.cidr, n2.addr) })
		t.Logf("restored after %s (check period 1s)", d.Round(time.Millisecond))
	})

	t.Run("foreign route untouched", func(t *testing.T) {
		eth, _ := n1.h.LinkByName("eth0")
		foreign := &netlink.Route{LinkIndex: eth.Attrs().Index, Dst: ipNet(netip.MustParsePrefix("192.0.2.0/24")), Gw: n3.addr.AsSlice()}
		if err := n1.h.RouteAdd(foreign); err != nil {
			t.Fatal(err)
		}
		m.children[n1.name].send(m.state) // a full sync reads the kernel back
		m.children[n1.name].send(m.state)
		rs, err := n1.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: foreign.Dst}, netlink.RT_FILTER_DST)
		if err != nil || len(rs) != 1 {
			t.Fatalf("foreign route: %v %v", rs, err)
		}
	})

	t.Run("graceful restart keeps routes and traffic", func(t *testing.T) {
		// Traffic and routes must survive while node2's router is down.
		m.children[n2.name].stop()
		m.children[n2.name] = nil
		for _, n := range []*testNode{n1, n3} {
			if !n.hasRoute(t, n2.cidr, n2.addr) {
				t.Errorf("%s dropped its route to node2 when node2's router stopped", n.name)
			}
		}
		if !n1.pod.Probe(t, "tcp", n2.pod.IPs[0], 8080) || !n2.pod.Probe(t, "tcp", n3.pod.IPs[0], 8080) {
			t.Error("traffic to and from node2 stopped while its router was down")
		}
		// Watch node1's route to node2 while node2's router comes back.
		var gaps int
		var gapStart time.Time
		var gapTotal time.Duration
		m.start(n2, cfg)
		waitFor(t, 60*time.Second, "node2's sessions back and the mesh converged", func() bool {
			has := n1.hasRoute(t, n2.cidr, n2.addr)
			switch {
			case !has && gapStart.IsZero():
				gaps++
				gapStart = time.Now()
			case has && !gapStart.IsZero():
				gapTotal += time.Since(gapStart)
				gapStart = time.Time{}
			}
			return n2.sessionEstablished(t, n1.addr) && n2.sessionEstablished(t, n3.addr) && m.converged(t)
		})
		m.reachAll(t)
		// Known gap (see the closing note): when the restarted gobgp
		// re-establishes, peers may drop its stale paths before the fresh ones
		// arrive; the route comes back within the same convergence.
		t.Logf("MEASURE: node1's route to node2 missing %d times, %s in total, while node2's router re-established", gaps, gapTotal.Round(time.Millisecond))
	})

	t.Run("departed node's routes removed", func(t *testing.T) {
		m.state.Nodes = m.state.Nodes[:2]
		begin := time.Now()
		m.children[n1.name].send(m.state)
		m.children[n2.name].send(m.state)
		m.children[n3.name].stop()
		m.children[n3.name] = nil
		waitFor(t, 30*time.Second, "node3's routes gone", func() bool {
			return !n1.hasRoute(t, n3.cidr, netip.Addr{}) && !n2.hasRoute(t, n3.cidr, netip.Addr{})
		})
		t.Logf("MEASURE: node3's routes gone from the others %s after it left", time.Since(begin).Round(time.Millisecond))
		if !n1.hasRoute(t, n2.cidr, n2.addr) || !n2.hasRoute(t, n1.cidr, n1.addr) {
			t.Error("the remaining nodes lost routes")
		}
	})

	t.Run("burst of 1000 paths", func(t *testing.T) {
		var burst []netip.Prefix
		for i := range 1000 {
			burst = append(burst, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + i/256), byte(i % 256), 0}), 24))
		}
		m.state.Nodes[1] = &model.Node{Name: n2.name, InternalIPs: []netip.Addr{n2.addr}, PodCIDRs: append([]netip.Prefix{n2.cidr}, burst...)}
		count := func() int { return len(n1.ourRoutes(t)) }
		base := count()
		m.children[n2.name].send(m.state)
		var first time.Time
		waitFor(t, 60*time.Second, "1000 routes installed", func() bool {
			c := count() - base
			if c > 0 && first.IsZero() {
				first = time.Now()
			}
			return c >= 1000
		})
		d := time.Since(first)
		t.Logf("MEASURE: 1000 routes installed in %s after the first: %.0f routes/s", d.Round(time.Millisecond), 1000/d.Seconds())
	})
}
