package bgp

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/nfrouter/nfrouter/model"
)

// TestIPv6PodCIDRPath follows an IPv6 pod CIDR through every planner of an
// IPv6-only cluster: node2's advertiser originates it, the path codec
// carries it with node2's address as next hop (MP_REACH_NLRI), and node1's
// peer and route planners turn the received path into a direct route via
// node2. ipip is IPv4 only, so the overlay never tunnels it, and a node on
// another subnet gets no route.
func TestIPv6PodCIDRPath(t *testing.T) {
	a := netip.MustParseAddr
	p := netip.MustParsePrefix
	cluster := nodes(
		node("n1", "fd00:0:1::1", nil, "fd00:244:1::/64"),
		node("n2", "fd00:0:1::2", nil, "fd00:244:2::/64"),
		node("n3", "fd00:0:2::1", nil, "fd00:244:3::/64"),
	)

	adv := NewAdvertiser("n2", AdvertiseFlags{PodCIDR: true})
	d, problems := adv.Update(&model.State{Nodes: cluster}, &model.Changes{Full: true})
	if got := fmt.Sprint(d.Add); got != "[fd00:244:2::/64]" || len(d.Withdraw) > 0 || len(problems) > 0 {
		t.Fatalf("node2 advertises +%s -%v (problems %v), want +[fd00:244:2::/64]", got, d.Withdraw, problems)
	}

	cfg := testConfig("n2")
	cfg.RouterID = a("10.0.0.2") // an IPv6-only node needs --router-id
	plan2, err := PlanPeers(cfg, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if plan2.Local.Primary() != a("fd00:0:1::2") {
		t.Fatalf("node2 peers from %s, want fd00:0:1::2", plan2.Local.Primary())
	}
	sent, err := apiPath(d.Add[0], plan2.Local.Primary())
	if err != nil {
		t.Fatal(err)
	}
	sent.NeighborIp = plan2.Local.Primary().String() // as node1's gobgp reports it
	got, err := bestPathFrom(sent)
	if err != nil {
		t.Fatal(err)
	}
	want := BestPath{Prefix: p("fd00:244:2::/64"), NextHop: a("fd00:0:1::2"), Peer: a("fd00:0:1::2")}
	if got != want {
		t.Fatalf("decoded path %+v, want %+v", got, want)
	}

	cfg = testConfig("n1")
	cfg.RouterID = a("10.0.0.1")
	plan1, err := PlanPeers(cfg, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if got := peerList(plan1); got != "fd00:0:1::2/64512 fd00:0:2::1/64512" {
		t.Errorf("node1 peers = %s", got)
	}
	env := func(overlay bool, typ string) *RouteEnv {
		return &RouteEnv{Local: plan1.Local, NodeAddrs: plan1.NodeAddrs, Subnets: []netip.Prefix{p("fd00:0:1::/64")},
			Overlay: overlay, OverlayType: typ, Ignore: map[netip.Prefix]bool{p("fd00:244:1::/64"): true}}
	}
	fromN3 := BestPath{Prefix: p("fd00:244:3::/64"), NextHop: a("fd00:0:2::1"), Peer: a("fd00:0:2::1")}
	tests := []struct {
		name string
		env  *RouteEnv
		path BestPath
		want string // "" for no route
	}{
		{"same subnet", env(false, OverlaySubnet), got, "fd00:244:2::/64 via fd00:0:1::2"},
		{"same subnet, full overlay: no IPv6 tunnel", env(true, OverlayFull), got, "fd00:244:2::/64 via fd00:0:1::2"},
		{"other subnet, overlay: no IPv6 tunnel, no route", env(true, OverlaySubnet), fromN3, ""},
		{"other subnet, no overlay: no route", env(false, OverlaySubnet), fromN3, ""},
		{"withdrawn", env(false, OverlaySubnet), BestPath{Prefix: got.Prefix, NextHop: got.NextHop, Peer: got.Peer, Withdraw: true}, ""},
		{"our own pod CIDR", env(false, OverlaySubnet), BestPath{Prefix: p("fd00:244:1::/64"), NextHop: a("fd00:0:1::2"), Peer: a("fd00:0:1::2")}, ""},
		// A dual-stack node peering over IPv4 would give an IPv4 next hop.
		{"IPv4-mapped next hop", env(false, OverlaySubnet), BestPath{Prefix: got.Prefix, NextHop: a("::ffff:10.0.0.2").Unmap(), Peer: got.Peer}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := PlanRoute(tt.env, tt.path)
			got := ""
			if ok {
				got = r.String()
			}
			if got != tt.want {
				t.Errorf("route = %q, want %q", got, tt.want)
			}
		})
	}
}
