package bgp

import (
	"net/netip"
	"testing"
)

func TestPlanRoute(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	env := func(overlay bool, typ string) *RouteEnv {
		return &RouteEnv{
			Local:     FamilyAddrs{V4: a("10.0.1.1")},
			NodeAddrs: map[netip.Addr]string{a("10.0.1.2"): "n2", a("10.0.2.1"): "n3"},
			Subnets:   []netip.Prefix{p("10.0.1.0/24")},
			Overlay:   overlay, OverlayType: typ,
			Ignore: map[netip.Prefix]bool{p("10.96.0.10/32"): true},
		}
	}
	path := func(dst, nh string) BestPath { return BestPath{Prefix: p(dst), NextHop: a(nh), Peer: a(nh)} }
	tests := []struct {
		name string
		env  *RouteEnv
		path BestPath
		want string // "" for no route
	}{
		{"same subnet: direct", env(false, OverlaySubnet), path("10.244.2.0/24", "10.0.1.2"), "10.244.2.0/24 via 10.0.1.2"},
		{"same subnet with subnet overlay: direct", env(true, OverlaySubnet), path("10.244.2.0/24", "10.0.1.2"), "10.244.2.0/24 via 10.0.1.2"},
		{"same subnet with full overlay: tunnel", env(true, OverlayFull), path("10.244.2.0/24", "10.0.1.2"), "10.244.2.0/24 dev nfr-0a000102 (remote 10.0.1.2)"},
		{"other subnet with overlay: tunnel", env(true, OverlaySubnet), path("10.244.3.0/24", "10.0.2.1"), "10.244.3.0/24 dev nfr-0a000201 (remote 10.0.2.1)"},
		{"other subnet without overlay: via next hop", env(false, OverlaySubnet), path("10.244.3.0/24", "10.0.2.1"), "10.244.3.0/24 via 10.0.2.1"},
		{"external router never tunnelled", env(true, OverlayFull), path("192.0.2.0/24", "10.0.1.254"), "192.0.2.0/24 via 10.0.1.254"},
		{"withdrawn", env(false, OverlaySubnet), BestPath{Prefix: p("10.244.2.0/24"), NextHop: a("10.0.1.2"), Peer: a("10.0.1.2"), Withdraw: true}, ""},
		{"our own path", env(false, OverlaySubnet), BestPath{Prefix: p("10.244.1.0/24"), NextHop: a("10.0.1.1")}, ""},
		{"next hop is us", env(false, OverlaySubnet), path("10.244.1.0/24", "10.0.1.1"), ""},
		{"service VIP ignored", env(false, OverlaySubnet), path("10.96.0.10/32", "10.0.1.2"), ""},
		{"family mismatch", env(false, OverlaySubnet), BestPath{Prefix: p("fd00::/64"), NextHop: a("10.0.1.2"), Peer: a("10.0.1.2")}, ""},
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
