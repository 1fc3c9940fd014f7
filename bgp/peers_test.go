package bgp

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
)

func node(name, ip string, ann map[string]string, cidrs ...string) *model.Node {
	n := &model.Node{Name: name, InternalIPs: []netip.Addr{netip.MustParseAddr(ip)}, Annotations: ann}
	for _, c := range cidrs {
		n.PodCIDRs = append(n.PodCIDRs, netip.MustParsePrefix(c))
	}
	return n
}

func nodes(ns ...*model.Node) model.Map[string, *model.Node] {
	var m model.Map[string, *model.Node]
	for _, n := range ns {
		m = m.With(n.Name, n)
	}
	return m
}

func testConfig(name string) *Config {
	c := DefaultConfig()
	c.NodeName = name
	return &c
}

// peerList renders the plan's peers compactly: addr/asn[/flags].
func peerList(p PeerPlan) string {
	var out []string
	for _, a := range sortedAddrs(p.Peers) {
		s := p.Peers[a]
		e := a.String() + "/" + itoa(s.ASN)
		if s.RRClusterID != "" {
			e += "/rr-client=" + s.RRClusterID
		}
		if s.MultihopTTL > 0 {
			e += "/ttl=" + itoa(uint32(s.MultihopTTL))
		}
		if s.Password != "" {
			e += "/pw=" + s.Password
		}
		if s.Port != DefaultPort {
			e += "/port=" + itoa(uint32(s.Port))
		}
		if s.Families != familiesOf(a) {
			e += "/" + s.Families.String()
		}
		out = append(out, e)
	}
	return strings.Join(out, " ")
}

func TestPlanPeers(t *testing.T) {
	a := "kube-router.io/"
	tests := []struct {
		name     string
		cfg      func(*Config)
		nodes    model.Map[string, *model.Node]
		want     string
		asn      uint32
		problems int
	}{
		{name: "full mesh", nodes: nodes(node("n1", "10.0.0.1", nil), node("n2", "10.0.0.2", nil), node("n3", "10.0.0.3", nil)),
			want: "10.0.0.2/64512 10.0.0.3/64512", asn: 64512},
		{name: "full mesh off", cfg: func(c *Config) { c.NodesFullMesh = false },
			nodes: nodes(node("n1", "10.0.0.1", nil), node("n2", "10.0.0.2", nil)), want: "", asn: 64512},
		{name: "cluster asn", cfg: func(c *Config) { c.ClusterASN = 65001 },
			nodes: nodes(node("n1", "10.0.0.1", nil), node("n2", "10.0.0.2", nil)), want: "10.0.0.2/65001", asn: 65001},
		{name: "node asn: only same-ASN nodes in the mesh",
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "node.asn": "65010"}),
				node("n2", "10.0.0.2", map[string]string{a + "node.asn": "65010"}), node("n3", "10.0.0.3", nil)),
			want: "10.0.0.2/65010", asn: 65010},
		{name: "malformed node asn: cluster ASN, one problem",
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "node.asn": "sixty"}), node("n2", "10.0.0.2", nil)),
			want:  "10.0.0.2/64512", asn: 64512, problems: 1},
		{name: "reserved node asn", nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "node.asn": "23456"})), asn: 64512, problems: 1},
		{name: "another node's malformed asn is not ours to report",
			nodes: nodes(node("n1", "10.0.0.1", nil), node("n2", "10.0.0.2", map[string]string{a + "node.asn": "x"})),
			want:  "10.0.0.2/64512", asn: 64512},
		{name: "rr client peers only with servers",
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "rr.client": "1"}),
				node("n2", "10.0.0.2", map[string]string{a + "rr.server": "1"}), node("n3", "10.0.0.3", nil),
				node("n4", "10.0.0.4", map[string]string{a + "rr.client": "1"})),
			want: "10.0.0.2/64512", asn: 64512},
		{name: "rr server reflects to clients and meshes with servers and plain nodes",
			cfg: func(c *Config) {},
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "rr.server": "42"}),
				node("n2", "10.0.0.2", map[string]string{a + "rr.server": "42"}), node("n3", "10.0.0.3", map[string]string{a + "rr.client": "42"}),
				node("n4", "10.0.0.4", nil)),
			want: "10.0.0.2/64512 10.0.0.3/64512/rr-client=0.0.0.42 10.0.0.4/64512", asn: 64512},
		{name: "rr servers peer without full mesh", cfg: func(c *Config) { c.NodesFullMesh = false },
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "rr.server": "10.1.1.1"}),
				node("n2", "10.0.0.2", map[string]string{a + "rr.server": "10.1.1.1"}), node("n3", "10.0.0.3", nil)),
			want: "10.0.0.2/64512", asn: 64512},
		{name: "plain node skips clients",
			nodes: nodes(node("n1", "10.0.0.1", nil), node("n2", "10.0.0.2", map[string]string{a + "rr.client": "1"})),
			want:  "", asn: 64512},
		{name: "malformed rr id ignored",
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "rr.client": "not-an-id"}), node("n2", "10.0.0.2", nil)),
			want:  "10.0.0.2/64512", asn: 64512, problems: 1},
		{name: "iBGP off: no node, not even a route reflector, only external routers",
			cfg: func(c *Config) {
				c.DisableIBGP = true
				c.PeerRouters = []ExternalPeer{{Addr: netip.MustParseAddr("192.0.2.1"), ASN: 65000}}
			},
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "rr.server": "1"}),
				node("n2", "10.0.0.2", map[string]string{a + "rr.server": "1"}), node("n3", "10.0.0.3", nil)),
			want: "192.0.2.1/65000", asn: 64512},
		{name: "peer routers with ports, passwords and multihop",
			cfg: func(c *Config) {
				c.MultihopTTL = 4
				c.PeerRouters = []ExternalPeer{{Addr: netip.MustParseAddr("192.0.2.1"), ASN: 65000, Password: "s3"},
					{Addr: netip.MustParseAddr("192.0.2.2"), ASN: 64512, Port: 1179}}
			},
			nodes: nodes(node("n1", "10.0.0.1", nil)),
			want:  "192.0.2.1/65000/ttl=4/pw=s3 192.0.2.2/64512/port=1179", asn: 64512},
		{name: "peers annotation adds and overrides",
			cfg: func(c *Config) { c.PeerRouters = []ExternalPeer{{Addr: netip.MustParseAddr("192.0.2.1"), ASN: 65000}} },
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "peers": "- remoteip: 192.0.2.1\n  remoteasn: 65100\n  password: c2VjcmV0\n" +
				"- remoteip: 192.0.2.9\n  remoteasn: 65009\n  port: 2179\n"})),
			want: "192.0.2.1/65100/pw=secret 192.0.2.9/65009/port=2179", asn: 64512},
		{name: "malformed peers annotation ignored whole",
			cfg:   func(c *Config) { c.PeerRouters = []ExternalPeer{{Addr: netip.MustParseAddr("192.0.2.1"), ASN: 65000}} },
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "peers": "- remoteip: 192.0.2.5\n  remoteasn: 65000\n- remoteip: bad\n  remoteasn: 1\n"})),
			want:  "192.0.2.1/65000", asn: 64512, problems: 1},
		{name: "peers annotation: unknown field, bad password",
			nodes: nodes(node("n1", "10.0.0.1", map[string]string{a + "peers": "- remoteip: 192.0.2.5\n  remoteasn: 65000\n  password: '%%'\n"})),
			want:  "", asn: 64512, problems: 1},
		{name: "external peer on a node address ignored",
			cfg:   func(c *Config) { c.PeerRouters = []ExternalPeer{{Addr: netip.MustParseAddr("10.0.0.2"), ASN: 65000}} },
			nodes: nodes(node("n1", "10.0.0.1", nil), node("n2", "10.0.0.2", nil)),
			want:  "10.0.0.2/64512", asn: 64512, problems: 1},
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
			if plan.LocalASN != tt.asn {
				t.Errorf("local ASN = %d, want %d", plan.LocalASN, tt.asn)
			}
			if len(plan.Problems) != tt.problems {
				t.Errorf("problems = %v, want %d", plan.Problems, tt.problems)
			}
		})
	}
}

func TestPlanPeersRouterID(t *testing.T) {
	cfg := testConfig("n1")
	plan, err := PlanPeers(cfg, nodes(node("n1", "10.0.0.1", nil)))
	if err != nil || plan.RouterID != netip.MustParseAddr("10.0.0.1") || plan.Local.Primary() != plan.RouterID {
		t.Fatalf("router ID = %v, %v", plan.RouterID, err)
	}
	cfg.RouterID = netip.MustParseAddr("1.2.3.4")
	if plan, _ = PlanPeers(cfg, nodes(node("n1", "10.0.0.1", nil))); plan.RouterID != cfg.RouterID {
		t.Errorf("--router-id ignored: %v", plan.RouterID)
	}
	if _, err := PlanPeers(testConfig("n1"), nodes(node("n1", "fd00::1", nil))); err == nil {
		t.Error("IPv6-only node without --router-id: no error")
	}
	if _, err := PlanPeers(testConfig("n9"), nodes(node("n1", "10.0.0.1", nil))); err == nil {
		t.Error("unknown local node: no error")
	}
}

// Of every two nodes exactly one dials, so that a restarted node and its
// peers never take turns refusing each other's connections.
func TestPlanPeersOneSideDials(t *testing.T) {
	cluster := nodes(node("n1", "10.0.0.1", nil), node("n2", "10.0.0.2", nil), node("n3", "10.0.0.3", nil))
	plans := map[string]PeerPlan{}
	for name := range cluster.All() {
		plan, err := PlanPeers(testConfig(name), cluster)
		if err != nil {
			t.Fatal(err)
		}
		plans[name] = plan
	}
	for a, pa := range plans {
		for addr, spec := range pa.Peers {
			back := plans[spec.Node].Peers[pa.Local.Primary()]
			if spec.Passive == back.Passive {
				t.Errorf("%s and %s both passive=%v", a, spec.Node, spec.Passive)
			}
			if want := pa.Local.Primary().Compare(addr) > 0; spec.Passive != want {
				t.Errorf("%s waits for %s: %v, want %v (the lower address dials)", a, spec.Node, spec.Passive, want)
			}
		}
	}
	ext := testConfig("n1")
	ext.PeerRouters = []ExternalPeer{{Addr: netip.MustParseAddr("10.0.0.0"), ASN: 65000}}
	plan, err := PlanPeers(ext, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Peers[netip.MustParseAddr("10.0.0.0")].Passive {
		t.Error("external router waited for; we must dial it")
	}
}
