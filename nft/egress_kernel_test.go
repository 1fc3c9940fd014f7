package nft

import (
	"testing"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/egress"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// TestKernelPodEgress programs pod egress on node-a and checks, for both
// families, the source address that servers see: a pod's connection to a
// host beyond the node arrives from node-a's address on that side, while
// connections to a pod on node-b and to node-b itself keep the pod's
// address. When node-b leaves the model its pod CIDR leaves the set (no
// chain is rewritten), and connections to that CIDR are masqueraded.
func TestKernelPodEgress(t *testing.T) {
	a, b := netnstest.NewNode(t), netnstest.NewNode(t)
	podA := pair("10.244.0.2", "fd00:244::2")
	pa := a.AddPod("pa", podA[0], podA[1])
	podB := pair("10.244.1.2", "fd00:244:0:1::2")
	pb := b.AddPod("pb", podB[0], podB[1])
	nodeAddrA, nodeAddrB := pair("192.168.1.10", "fd00:1::10"), pair("192.168.1.11", "fd00:1::11")
	wire(t, a.NS, b.NS, "eth0", "eth0", []string{"192.168.1.10/24", "fd00:1::10/64"}, []string{"192.168.1.11/24", "fd00:1::11/64"})
	routeVia(t, a.NS, "192.168.1.11", "10.244.1.0/24")
	routeVia(t, a.NS, "fd00:1::11", "fd00:244:0:1::/64")
	routeVia(t, b.NS, "192.168.1.10", "10.244.0.0/24")
	routeVia(t, b.NS, "fd00:1::10", "fd00:244::/64")
	// The outside host routes back to the pods, so that connections work
	// without masquerading too and the source it sees tells which it was.
	outside := kerneltest.NewNetNS(t)
	uplinkA, outsideAddr := pair("198.51.100.1", "2001:db8::1"), pair("198.51.100.2", "2001:db8::2")
	wire(t, a.NS, outside, "uplink", "eth0", []string{"198.51.100.1/24", "2001:db8::1/64"}, []string{"198.51.100.2/24", "2001:db8::2/64"})
	routeVia(t, outside, "198.51.100.1", "10.244.0.0/16")
	routeVia(t, outside, "2001:db8::1", "fd00:244::/48")
	const port = 8080
	serveIdentity(t, outside, "outside", port)
	serveIdentity(t, b.NS, "node-b", port)
	serveIdentity(t, pb.NS, pb.Name, port)

	nodeA := &model.Node{Name: "node-a", InternalIPs: modeltest.Addrs("192.168.1.10", "fd00:1::10"),
		PodCIDRs: prefixesOf("10.244.0.0/24", "fd00:244::/64")}
	nodeB := &model.Node{Name: "node-b", InternalIPs: modeltest.Addrs("192.168.1.11", "fd00:1::11"),
		PodCIDRs: prefixesOf("10.244.1.0/24", "fd00:244:0:1::/64")}
	both := &model.State{Nodes: model.MapOf(map[string]*model.Node{"node-a": nodeA, "node-b": nodeB})}
	onlyA := &model.State{Nodes: model.MapOf(map[string]*model.Node{"node-a": nodeA})}

	type check struct {
		what      string
		dst, want byFamily
	}
	run := func(stage string, checks ...check) {
		t.Helper()
		for _, c := range checks {
			for _, v6 := range []bool{false, true} {
				wantSource(t, stage+": "+c.what, pa.NS, c.dst.of(v6), port, c.want.of(v6))
			}
		}
	}

	run("not programmed", check{"pod to outside", outsideAddr, podA})

	mk := func(tbl *ruleset.Table) []Part { return []Part{egress.New(tbl)} }
	be := newBackendIn(t, a.NS, func(tbl *ruleset.Table) Part { return mk(tbl)[0] })
	syncOK(t, be, both, &model.Changes{Full: true})
	requireRoundTrip(t, a.NS, be, both, mk)
	run("both nodes",
		check{"pod to outside", outsideAddr, uplinkA},
		check{"pod to pod on node-b", podB, podA},
		check{"pod to node-b", nodeAddrB, podA})

	ch := &model.Changes{}
	ch.Nodes.Add("node-b")
	if s := syncOK(t, be, onlyA, ch); s.ChainsRewritten != 0 || s.Messages == 0 {
		t.Errorf("node-b leaving: %d messages, %d chains rewritten; want some messages and no chain rewritten", s.Messages, s.ChainsRewritten)
	}
	run("node-b gone",
		check{"pod to outside", outsideAddr, uplinkA},
		check{"pod to a pod CIDR no node has", podB, nodeAddrA})
	requireRoundTrip(t, a.NS, be, onlyA, mk)
}
