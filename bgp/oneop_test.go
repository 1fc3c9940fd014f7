package bgp

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/model"
)

// opsDeadline bounds each wait for a route operation; generous for the VM
// tier's software emulation.
const opsDeadline = 60 * time.Second

// TestOneBestPathEventOneRouteOperation counts, with a netlink monitor in
// node1's namespace, the kernel route operations that best-path events
// cause there: a new path is one add, a withdrawal one delete, a full resync
// of an unchanged model nothing, a burst of paths one add each, a departed
// node one delete per prefix it had.
//
// Counts are read after a barrier: a marker path advertised after the
// events under test on the same session, so its best-path event reaches
// node1 after theirs. An operation caused by those events would show before
// the marker's.
func TestOneBestPathEventOneRouteOperation(t *testing.T) {
	m := newMesh(t, 3)
	n1, n2, n3 := m.nodes[0], m.nodes[1], m.nodes[2]
	ops := watchRouteOps(t, n1.ns.NS)
	want := map[netip.Prefix][]string{}
	check := func(t *testing.T) {
		t.Helper()
		ops.expect(t, want)
		n := 0
		for _, w := range want {
			n += len(w)
		}
		if got := ops.total(); got != n {
			t.Errorf("%d route operations on node1 in all, want %d", got, n)
		}
	}
	markers := 0
	// barrier advertises a new marker from node n and waits until node1
	// installed it.
	barrier := func(t *testing.T, n *testNode) {
		t.Helper()
		p := markerPrefix(markers)
		markers++
		node := m.state.Nodes[slices.IndexFunc(m.state.Nodes, func(mn *model.Node) bool { return mn.Name == n.name })]
		node.PodCIDRs = append(node.PodCIDRs, p)
		m.children[n.name].send(m.state)
		ops.await(t, opsDeadline, p, "add")
		want[p] = []string{"add"}
	}

	for _, n := range m.nodes {
		m.start(n, childConfig{})
	}
	ops.await(t, opsDeadline, n2.cidr, "add")
	ops.await(t, opsDeadline, n3.cidr, "add")
	want[n2.cidr], want[n3.cidr] = []string{"add"}, []string{"add"}
	barrier(t, n2)
	check(t)

	t.Run("unchanged resync costs nothing", func(t *testing.T) {
		for range 2 {
			for _, n := range m.nodes {
				m.children[n.name].send(m.state)
			}
		}
		barrier(t, n2)
		check(t)
	})

	var burst []netip.Prefix
	for i := range 200 {
		burst = append(burst, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 100, byte(i), 0}), 24))
	}
	t.Run("burst of paths: one add each", func(t *testing.T) {
		before := slices.Clone(m.state.Nodes[1].PodCIDRs)
		m.state.Nodes[1].PodCIDRs = append(before, burst...)
		m.children[n2.name].send(m.state)
		for _, p := range burst {
			ops.await(t, opsDeadline, p, "add")
			want[p] = []string{"add"}
		}
		barrier(t, n2)
		check(t)
	})

	t.Run("withdrawn paths: one delete each", func(t *testing.T) {
		m.state.Nodes[1].PodCIDRs = slices.DeleteFunc(m.state.Nodes[1].PodCIDRs, func(p netip.Prefix) bool { return slices.Contains(burst, p) })
		m.children[n2.name].send(m.state)
		for _, p := range burst {
			ops.await(t, opsDeadline, p, "del")
			want[p] = append(want[p], "del")
		}
		barrier(t, n2)
		check(t)
	})

	t.Run("departed node: one delete per prefix", func(t *testing.T) {
		gone := m.state.Nodes[1].PodCIDRs
		m.state.Nodes = []*model.Node{m.state.Nodes[0], m.state.Nodes[2]}
		m.children[n1.name].send(m.state)
		m.children[n3.name].send(m.state)
		m.children[n2.name].stop()
		m.children[n2.name] = nil
		for _, p := range gone {
			ops.await(t, opsDeadline, p, "del")
			want[p] = append(want[p], "del")
		}
		barrier(t, n3)
		check(t)
	})
}
