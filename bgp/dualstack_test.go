package bgp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
)

// dualNode is a node with one internal address and one pod CIDR per family
// ("" leaves a family out).
func dualNode(name, ip4, ip6, cidr4, cidr6 string) *model.Node {
	n := &model.Node{Name: name}
	for _, ip := range []string{ip4, ip6} {
		if ip != "" {
			n.InternalIPs = append(n.InternalIPs, netip.MustParseAddr(ip))
		}
	}
	for _, c := range []string{cidr4, cidr6} {
		if c != "" {
			n.PodCIDRs = append(n.PodCIDRs, netip.MustParsePrefix(c))
		}
	}
	return n
}

func TestAddrsOf(t *testing.T) {
	a := netip.MustParseAddr
	tests := []struct {
		name string
		node *model.Node
		want FamilyAddrs
	}{
		{"IPv4 only", &model.Node{InternalIPs: []netip.Addr{a("10.0.0.1")}}, FamilyAddrs{V4: a("10.0.0.1")}},
		{"IPv6 first: one of each family, first of each", &model.Node{InternalIPs: []netip.Addr{a("fd00::1"), a("10.0.0.1"), a("fd00::2"), a("10.0.0.2")}},
			FamilyAddrs{V4: a("10.0.0.1"), V6: a("fd00::1")}},
		{"mapped IPv4 is IPv4", &model.Node{InternalIPs: []netip.Addr{a("::ffff:10.0.0.1")}}, FamilyAddrs{V4: a("10.0.0.1")}},
		{"external only without internal", &model.Node{ExternalIPs: []netip.Addr{a("fd00::9"), a("192.0.2.9")}},
			FamilyAddrs{V4: a("192.0.2.9"), V6: a("fd00::9")}},
		{"internal wins over external", &model.Node{InternalIPs: []netip.Addr{a("fd00::1")}, ExternalIPs: []netip.Addr{a("192.0.2.9")}},
			FamilyAddrs{V6: a("fd00::1")}},
		{"none", &model.Node{}, FamilyAddrs{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AddrsOf(tt.node); got != tt.want {
				t.Errorf("AddrsOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestPlanPeersDualStack: nodes peer once per family both have, between
// their addresses of that family; external routers carry every family the
// node has an address of, and their own.
func TestPlanPeersDualStack(t *testing.T) {
	ds := func(i int) *model.Node {
		return dualNode(fmt.Sprintf("n%d", i), fmt.Sprintf("10.0.0.%d", i), fmt.Sprintf("fd00::%d", i),
			fmt.Sprintf("10.244.%d.0/24", i), fmt.Sprintf("fd00:244:%d::/64", i))
	}
	v4only := func(i int) *model.Node {
		return dualNode(fmt.Sprintf("n%d", i), fmt.Sprintf("10.0.0.%d", i), "", fmt.Sprintf("10.244.%d.0/24", i), "")
	}
	v6only := func(i int) *model.Node {
		return dualNode(fmt.Sprintf("n%d", i), "", fmt.Sprintf("fd00::%d", i), "", fmt.Sprintf("fd00:244:%d::/64", i))
	}
	ext := func(addrs ...string) func(*Config) {
		return func(c *Config) {
			for _, a := range addrs {
				c.PeerRouters = append(c.PeerRouters, ExternalPeer{Addr: netip.MustParseAddr(a), ASN: 65000})
			}
		}
	}
	tests := []struct {
		name      string
		cfg       func(*Config)
		nodes     model.Map[string, *model.Node]
		want      string
		nodeAddrs string
	}{
		{name: "dual-stack mesh: one session per family",
			nodes:     nodes(ds(1), ds(2), ds(3)),
			want:      "10.0.0.2/64512 10.0.0.3/64512 fd00::2/64512 fd00::3/64512",
			nodeAddrs: "10.0.0.2=n2 10.0.0.3=n3 fd00::2=n2 fd00::3=n3"},
		{name: "IPv4-only peer node: IPv4 session only",
			nodes:     nodes(ds(1), v4only(2), ds(3)),
			want:      "10.0.0.2/64512 10.0.0.3/64512 fd00::3/64512",
			nodeAddrs: "10.0.0.2=n2 10.0.0.3=n3 fd00::3=n3"},
		{name: "IPv4-only local node: no IPv6 sessions",
			nodes:     nodes(v4only(1), ds(2), v6only(3)),
			want:      "10.0.0.2/64512",
			nodeAddrs: "10.0.0.2=n2 fd00::2=n2 fd00::3=n3"},
		{name: "dual-stack node's external routers carry both families",
			cfg: ext("192.0.2.1", "2001:db8::1"), nodes: nodes(ds(1)),
			want: "192.0.2.1/65000/ipv4+ipv6 2001:db8::1/65000/ipv4+ipv6"},
		{name: "IPv4-only node's external routers: IPv4, and the router's own family",
			cfg: ext("192.0.2.1", "2001:db8::1"), nodes: nodes(v4only(1)),
			want: "192.0.2.1/65000 2001:db8::1/65000/ipv4+ipv6"},
		{name: "external router on a node's IPv6 address ignored",
			cfg: ext("fd00::2"), nodes: nodes(ds(1), ds(2)),
			want: "10.0.0.2/64512 fd00::2/64512", nodeAddrs: "10.0.0.2=n2 fd00::2=n2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig("n1")
			if tt.cfg != nil {
				tt.cfg(cfg)
			}
			plan, err := PlanPeers(cfg, tt.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if got := peerList(plan); got != tt.want {
				t.Errorf("peers = %q, want %q", got, tt.want)
			}
			var na []string
			for _, a := range sortedAddrs(plan.NodeAddrs) {
				na = append(na, a.String()+"="+plan.NodeAddrs[a])
			}
			if got := strings.Join(na, " "); got != tt.nodeAddrs {
				t.Errorf("node addresses = %q, want %q", got, tt.nodeAddrs)
			}
		})
	}

	// Of every two nodes exactly one dials, in each family.
	cluster := nodes(ds(1), ds(2), ds(3))
	plans := map[string]PeerPlan{}
	for name := range cluster.All() {
		plan, err := PlanPeers(testConfig(name), cluster)
		if err != nil {
			t.Fatal(err)
		}
		plans[name] = plan
	}
	for a, pa := range plans {
		if pa.Local.Primary() != pa.Local.V4 || !pa.Local.V6.IsValid() || pa.RouterID != pa.Local.V4 {
			t.Errorf("%s: node address %s, local %+v, router ID %s", a, pa.Local.Primary(), pa.Local, pa.RouterID)
		}
		for addr, spec := range pa.Peers {
			from := pa.Local.For(addr)
			back, ok := plans[spec.Node].Peers[from]
			if !ok || back.Families != spec.Families || spec.Families != familiesOf(addr) {
				t.Errorf("%s->%s: families %s, back %s (%v)", from, addr, spec.Families, back.Families, ok)
			}
			if spec.Passive == back.Passive || spec.Passive != (from.Compare(addr) > 0) {
				t.Errorf("%s->%s passive=%v, back passive=%v: want the lower address to dial", from, addr, spec.Passive, back.Passive)
			}
		}
	}
}

// TestRouteReflectionDualStack: a route-reflector server reflects to its
// clients in both families.
func TestRouteReflectionDualStack(t *testing.T) {
	rr := map[string]string{AnnotationRRServer: "42"}
	cl := map[string]string{AnnotationRRClient: "42"}
	n1 := dualNode("n1", "10.0.0.1", "fd00::1", "", "")
	n1.Annotations = rr
	n2 := dualNode("n2", "10.0.0.2", "fd00::2", "", "")
	n2.Annotations = cl
	plan, err := PlanPeers(testConfig("n1"), nodes(n1, n2))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := peerList(plan), "10.0.0.2/64512/rr-client=0.0.0.42 fd00::2/64512/rr-client=0.0.0.42"; got != want {
		t.Errorf("peers = %q, want %q", got, want)
	}
}

// TestSessionFamilies: the gobgp peer enables one AFI/SAFI per family of
// the spec, each with graceful restart when it is on.
func TestSessionFamilies(t *testing.T) {
	a := netip.MustParseAddr
	for _, gr := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.GracefulRestart = gr
		sp := &Speaker{cfg: &cfg}
		for _, tt := range []struct {
			spec PeerSpec
			want string
		}{
			{PeerSpec{Addr: a("10.0.0.2"), ASN: 64512, Families: IPv4}, "AFI_IP"},
			{PeerSpec{Addr: a("fd00::2"), ASN: 64512, Families: IPv6}, "AFI_IP6"},
			{PeerSpec{Addr: a("192.0.2.1"), ASN: 65000, Families: IPv4 | IPv6}, "AFI_IP AFI_IP6"},
			{PeerSpec{Addr: a("fd00::2"), ASN: 64512}, "AFI_IP6"}, // no families: the address's
		} {
			p := sp.apiPeer(64512, tt.spec)
			var got []string
			for _, afi := range p.AfiSafis {
				f := afi.GetConfig().GetFamily()
				if !afi.GetConfig().GetEnabled() || f.GetSafi().String() != "SAFI_UNICAST" {
					t.Errorf("%s: AFI/SAFI %v not enabled unicast", tt.spec.Addr, afi)
				}
				if gr != afi.GetMpGracefulRestart().GetConfig().GetEnabled() {
					t.Errorf("%s %s: graceful restart %v, want %v", tt.spec.Addr, f.GetAfi(), !gr, gr)
				}
				got = append(got, f.GetAfi().String())
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("%s %s: AFIs %v, want %s", tt.spec.Addr, tt.spec.Families, got, tt.want)
			}
		}
	}
}

// TestDualStackNextHops follows both pod CIDRs of a dual-stack node through
// the advertiser and the path codec: the IPv4 one leaves with the node's
// IPv4 address in NEXT_HOP, the IPv6 one with its IPv6 address in
// MP_REACH_NLRI; a peer routes each via the address of its family.
func TestDualStackNextHops(t *testing.T) {
	a := netip.MustParseAddr
	p := netip.MustParsePrefix
	cluster := nodes(
		dualNode("n1", "10.0.0.1", "fd00::1", "10.244.1.0/24", "fd00:244:1::/64"),
		dualNode("n2", "10.0.0.2", "fd00::2", "10.244.2.0/24", "fd00:244:2::/64"),
		dualNode("n3", "10.0.1.3", "fd00:1::3", "10.244.3.0/24", "fd00:244:3::/64"),
	)
	plan2, err := PlanPeers(testConfig("n2"), cluster)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := NewAdvertiser("n2", AdvertiseFlags{PodCIDR: true}).Update(&model.State{Nodes: cluster}, &model.Changes{Full: true})
	if got := fmt.Sprint(d.Add); got != "[10.244.2.0/24 fd00:244:2::/64]" {
		t.Fatalf("node2 advertises %s", got)
	}
	var received []BestPath
	for _, prefix := range d.Add {
		nh := plan2.Local.For(prefix.Addr())
		path, err := apiPath(prefix, nh)
		if err != nil {
			t.Fatal(err)
		}
		wantFamily := familyV4
		if prefix.Addr().Is6() {
			wantFamily = familyV6
		}
		if path.Family.Afi != wantFamily.Afi {
			t.Errorf("%s: family %v", prefix, path.Family)
		}
		path.NeighborIp = nh.String() // the session of that family
		bp, err := bestPathFrom(path)
		if err != nil {
			t.Fatal(err)
		}
		received = append(received, bp)
	}
	want := []BestPath{
		{Prefix: p("10.244.2.0/24"), NextHop: a("10.0.0.2"), Peer: a("10.0.0.2")},
		{Prefix: p("fd00:244:2::/64"), NextHop: a("fd00::2"), Peer: a("fd00::2")},
	}
	if fmt.Sprint(received) != fmt.Sprint(want) {
		t.Fatalf("decoded %+v, want %+v", received, want)
	}

	plan1, err := PlanPeers(testConfig("n1"), cluster)
	if err != nil {
		t.Fatal(err)
	}
	fromN3v4 := BestPath{Prefix: p("10.244.3.0/24"), NextHop: a("10.0.1.3"), Peer: a("10.0.1.3")}
	fromN3v6 := BestPath{Prefix: p("fd00:244:3::/64"), NextHop: a("fd00:1::3"), Peer: a("fd00:1::3")}
	env := func(overlay bool, typ string) *RouteEnv {
		return &RouteEnv{Local: plan1.Local, NodeAddrs: plan1.NodeAddrs, Subnets: []netip.Prefix{p("10.0.0.0/24"), p("fd00::/64")},
			Overlay: overlay, OverlayType: typ, Ignore: map[netip.Prefix]bool{p("10.244.1.0/24"): true, p("fd00:244:1::/64"): true}}
	}
	tests := []struct {
		name      string
		env       *RouteEnv
		path      BestPath
		want      string // "" for no route
		offSubnet bool
	}{
		{"IPv4 via the node's IPv4 address", env(false, OverlaySubnet), received[0], "10.244.2.0/24 via 10.0.0.2", false},
		{"IPv6 via the node's IPv6 address", env(false, OverlaySubnet), received[1], "fd00:244:2::/64 via fd00::2", false},
		{"full overlay tunnels IPv4 only", env(true, OverlayFull), received[1], "fd00:244:2::/64 via fd00::2", false},
		{"full overlay IPv4 tunnel from our IPv4 address", env(true, OverlayFull), received[0], "10.244.2.0/24 dev nfr-0a000002 (remote 10.0.0.2)", false},
		{"other subnet, overlay: IPv4 tunnelled", env(true, OverlaySubnet), fromN3v4, "10.244.3.0/24 dev nfr-0a000103 (remote 10.0.1.3)", false},
		{"other subnet, overlay: IPv6 not routed", env(true, OverlaySubnet), fromN3v6, "", true},
		{"other subnet, no overlay: IPv6 not routed", env(false, OverlaySubnet), fromN3v6, "", true},
		{"withdrawn IPv6 from another subnet: nothing to report", env(false, OverlaySubnet),
			BestPath{Prefix: fromN3v6.Prefix, NextHop: fromN3v6.NextHop, Peer: fromN3v6.Peer, Withdraw: true}, "", false},
		{"next hop is our IPv6 address", env(false, OverlaySubnet), BestPath{Prefix: p("fd00:244:9::/64"), NextHop: a("fd00::1"), Peer: a("fd00::2")}, "", false},
		{"IPv6 from an external router on a link: via it", env(true, OverlayFull),
			BestPath{Prefix: p("2001:db8:1::/48"), NextHop: a("fd00::fe"), Peer: a("fd00::fe")}, "2001:db8:1::/48 via fd00::fe", false},
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
			if off := tt.env.OffSubnetIPv6(tt.path); off != tt.offSubnet {
				t.Errorf("OffSubnetIPv6 = %v, want %v", off, tt.offSubnet)
			}
		})
	}
}

// TestNoNextHopReported: a prefix to advertise of a family the node has no
// address of is reported (the speaker leaves it out).
func TestNoNextHopReported(t *testing.T) {
	r := &Router{cfg: Config{NodeName: "n1"}, plan: PeerPlan{Local: FamilyAddrs{V4: netip.MustParseAddr("10.0.0.1")}}}
	got := r.noNextHop([]netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:96::10/128")})
	if len(got) != 1 || got[0].Reason != "NoNextHop" || !strings.Contains(got[0].Message, "fd00:96::10/128") {
		t.Errorf("problems = %+v, want one NoNextHop for fd00:96::10/128", got)
	}
}
