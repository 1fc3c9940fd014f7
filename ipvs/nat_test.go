package ipvs

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// planNAT plans st from scratch with cfg and returns the table.
func planNAT(st *model.State, cfg NATConfig) (*ruleset.Table, *NAT) {
	tab := ruleset.NewTable("inet", "nfrouter")
	n := NewNAT(tab, cfg)
	n.Plan(context.Background(), st, &model.Changes{Full: true})
	return tab, n
}

// natNodes are this node and another, each with a pod CIDR per family.
func natNodes() []*model.Node {
	return []*model.Node{
		{Name: thisNode, InternalIPs: addrs("192.168.1.10", "fd00:1::10"),
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/24"), netip.MustParsePrefix("fd00:10::/64")}},
		{Name: "node-b", InternalIPs: addrs("192.168.1.11"),
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.1.0/24")}},
	}
}

// TestNATShapes plans one state per service shape and flag from scratch and
// compares the nft text with testdata/nat/*.golden.
func TestNATShapes(t *testing.T) {
	web := func(opts ...func(*model.ServicePort)) *model.ServicePort {
		return svc("default", "web", 80, append([]func(*model.ServicePort){clusterIPs("10.96.0.10")}, opts...)...)
	}
	webKey := web().Key
	eps := map[model.ServicePortKey]model.Endpoints{webKey: {
		ep("10.1.0.2:8080@"+thisNode, "rs"), ep("10.1.0.3:8080@"+thisNode, "rs"), ep("10.1.1.3:8080@node-b", "rs"),
		ep("[fd00:10::2]:8080@"+thisNode, "rs"),
	}}
	nodePort := func(sp *model.ServicePort) { sp.NodePort = 30080 }
	dualStack := clusterIPs("10.96.0.10", "fd00:96::10")
	hairpin := func(sp *model.ServicePort) { sp.Options.Hairpin = true }
	dns := []*model.ServicePort{
		svc("kube-system", "dns", 53, clusterIPs("10.96.0.53"), proto(model.UDP, "dns")),
		svc("kube-system", "dns", 53, clusterIPs("10.96.0.53"), proto(model.TCP, "dns-tcp")),
	}
	cases := []struct {
		name  string
		ports []*model.ServicePort
		cfg   NATConfig
	}{
		{name: "empty"},
		{name: "cluster-ip", ports: []*model.ServicePort{web()}},
		{name: "node-port-dual-stack", ports: []*model.ServicePort{web(nodePort, dualStack)}},
		{name: "external-and-load-balancer-ips", ports: append(dns, web(func(sp *model.ServicePort) {
			sp.ExternalIPs = addrs("198.51.100.7")
			sp.LoadBalancerIPs = addrs("198.51.100.80")
		}))},
		{name: "external-traffic-local", ports: []*model.ServicePort{web(nodePort, func(sp *model.ServicePort) {
			sp.ExternalTrafficLocal = true
			sp.ExternalIPs = addrs("198.51.100.7")
		})}},
		{name: "masquerade-all", ports: []*model.ServicePort{web(nodePort)}, cfg: NATConfig{MasqueradeAll: true}},
		{name: "cluster-cidr-flag", ports: []*model.ServicePort{web(dualStack)},
			cfg: NATConfig{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00:10::/56")}}},
		// IPv4 range only: only IPv4 unallocated addresses are dropped.
		{name: "service-cidr-flag", ports: []*model.ServicePort{web(dualStack)},
			cfg: NATConfig{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}}},
		{name: "hairpin-annotation", ports: append(dns, web(hairpin, dualStack, nodePort))},
		{name: "hairpin-mode", ports: append(dns, web(dualStack)), cfg: NATConfig{HairpinAll: true}},
		{name: "load-balancer-source-ranges", ports: []*model.ServicePort{web(dualStack, func(sp *model.ServicePort) {
			sp.LoadBalancerIPs = addrs("198.51.100.80", "198.51.100.81", "2001:db8::80")
			sp.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("203.0.113.0/25")}
		})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.NodeName = thisNode
			tab, _ := planNAT(modeltest.NewState(natNodes(), tc.ports, eps), tc.cfg)
			compareGolden(t, "nat/"+tc.name, ruleset.Text(tab))
		})
	}
}

// TestNATChangeTouchesOnlyItsElements checks that service and endpoint
// churn edits set elements and never rewrites a chain, and that a change
// NAT does not program (an endpoint of a service without hairpin) touches
// nothing.
func TestNATChangeTouchesOnlyItsElements(t *testing.T) {
	web := svc("default", "web", 80, clusterIPs("10.96.0.10"))
	pin := svc("default", "pin", 80, clusterIPs("10.96.0.11"), func(sp *model.ServicePort) { sp.Options.Hairpin = true })
	one := model.Endpoints{ep("10.1.0.2:8080@"+thisNode, "rs")}
	two := model.Endpoints{ep("10.1.0.2:8080@"+thisNode, "rs"), ep("10.1.0.3:8080@"+thisNode, "rs")}
	st := modeltest.NewState(natNodes(), []*model.ServicePort{web, pin}, map[model.ServicePortKey]model.Endpoints{web.Key: one, pin.Key: one})
	tab, n := planNAT(st, NATConfig{PlanConfig: PlanConfig{NodeName: thisNode}})
	tab.TakeDirty()

	step := func(name string, next *model.State, ch *model.Changes, wantSets []string) {
		t.Helper()
		n.Plan(context.Background(), next, ch)
		chains, sets, _ := tab.TakeDirty()
		if len(chains) != 0 || !slices.Equal(sets, wantSets) {
			t.Errorf("%s: changed chains %v and sets %v, want no chain and sets %v", name, chains, sets, wantSets)
		}
	}
	next := modeltest.NewState(natNodes(), []*model.ServicePort{web, pin}, map[model.ServicePortKey]model.Endpoints{web.Key: two, pin.Key: one})
	step("endpoint of a service without hairpin", next, changesOf(nil, []model.ServicePortKey{web.Key}), nil)

	next2 := modeltest.NewState(natNodes(), []*model.ServicePort{web, pin}, map[model.ServicePortKey]model.Endpoints{web.Key: two, pin.Key: two})
	step("endpoint of a hairpin service", next2, changesOf(nil, []model.ServicePortKey{pin.Key}), []string{hairpinSet(false)})

	other := svc("default", "other", 81, clusterIPs("10.96.0.12"))
	next3 := modeltest.NewState(natNodes(), []*model.ServicePort{web, pin, other}, maps.Collect(next2.Endpoints.All()))
	step("new service", next3, changesOf([]model.ServicePortKey{other.Key}, nil), []string{servicesSet(false), vipsSet(false)})
}

// TestNATAnyStateFollowsAnyOther walks random states, planning each from the
// changed keys only, and checks that the table always equals what a fresh
// NAT plans for the same state.
func TestNATAnyStateFollowsAnyOther(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randomState := func() *model.State {
		var ports []*model.ServicePort
		eps := map[model.ServicePortKey]model.Endpoints{}
		for i := range 6 {
			if rng.IntN(3) == 0 {
				continue
			}
			ips := [][]string{{fmt.Sprintf("10.96.0.%d", i+1)}, {fmt.Sprintf("fd00:96::%d", i+1)},
				{fmt.Sprintf("10.96.0.%d", i+1), fmt.Sprintf("fd00:96::%d", i+1)}}[rng.IntN(3)]
			sp := svc("ns", fmt.Sprintf("s%d", i), uint16(80+rng.IntN(2)), clusterIPs(ips...), func(sp *model.ServicePort) {
				if rng.IntN(2) == 0 {
					sp.NodePort = uint16(30000 + i)
				}
				if rng.IntN(3) == 0 {
					// Shared between services: elements are counted.
					sp.ExternalIPs = addrs("198.51.100.1")
				}
				sp.ExternalTrafficLocal = rng.IntN(3) == 0
				sp.Options.Hairpin = rng.IntN(2) == 0
				if rng.IntN(2) == 0 {
					sp.LoadBalancerIPs = addrs(fmt.Sprintf("198.51.100.%d", 80+i), fmt.Sprintf("2001:db8::%d", 80+i))
					sp.LoadBalancerSourceRanges = [][]netip.Prefix{nil, {netip.MustParsePrefix("192.0.2.0/24")},
						{netip.MustParsePrefix("192.0.2.0/25"), netip.MustParsePrefix("2001:db8:1::/48")}}[rng.IntN(3)]
				}
			})
			ports = append(ports, sp)
			var e model.Endpoints
			for j := range rng.IntN(3) {
				nodeName := []string{thisNode, "node-b"}[rng.IntN(2)]
				e = append(e, ep(fmt.Sprintf("10.1.%d.%d:8080@%s", j, i+1, nodeName), "rs"),
					ep(fmt.Sprintf("[fd00:10::%d:%d]:8080@%s", j, i+1, nodeName), "rs"))
			}
			slices.SortFunc(e, func(a, b model.Endpoint) int { return a.Addr.Compare(b.Addr) })
			eps[sp.Key] = e
		}
		nodes := natNodes()
		switch rng.IntN(4) {
		case 0:
			nodes = nodes[:1]
		case 1:
			nodes[0] = &model.Node{Name: thisNode, InternalIPs: addrs("192.168.1.20"), PodCIDRs: nodes[0].PodCIDRs[:1]}
		}
		return modeltest.NewState(nodes, ports, eps)
	}
	for _, cfg := range []NATConfig{{}, {MasqueradeAll: true}, {HairpinAll: true},
		{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:96::/112")}}} {
		cfg.NodeName = thisNode
		tab := ruleset.NewTable("inet", "nfrouter")
		n := NewNAT(tab, cfg)
		prev := modeltest.NewState(nil, nil, nil)
		n.Plan(context.Background(), prev, &model.Changes{Full: true})
		for step := range 300 {
			next := randomState()
			n.Plan(context.Background(), next, modeltest.ServiceChanges(prev, next))
			want, _ := planNAT(next, cfg)
			if got, w := ruleset.Text(tab), ruleset.Text(want); got != w {
				t.Fatalf("%+v step %d: incremental plan differs from a fresh one:\n--- incremental\n%s\n--- fresh\n%s", cfg, step, got, w)
			}
			prev = next
		}
	}
}

// TestNATNoClusterCIDRs checks when the NAT part says that pods'
// connections are masqueraded for want of cluster CIDRs, and that it notices
// when nodes bring pod CIDRs.
func TestNATNoClusterCIDRs(t *testing.T) {
	bare := modeltest.NewState([]*model.Node{{Name: thisNode, InternalIPs: addrs("192.168.1.10")}}, nil, nil)
	for _, c := range []struct {
		name string
		cfg  NATConfig
		want bool
	}{
		{"no flag, nodes without pod CIDRs", NATConfig{}, true},
		{"--cluster-cidr", NATConfig{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, false},
		{"--masquerade-all asks for it", NATConfig{MasqueradeAll: true}, false},
	} {
		c.cfg.NodeName = thisNode
		_, n := planNAT(bare, c.cfg)
		if got := n.NoClusterCIDRs(); got != c.want {
			t.Errorf("%s: NoClusterCIDRs() = %v, want %v", c.name, got, c.want)
		}
	}
	_, n := planNAT(bare, NATConfig{PlanConfig: PlanConfig{NodeName: thisNode}})
	withCIDRs := modeltest.NewState(natNodes(), nil, nil)
	n.Plan(t.Context(), withCIDRs, modeltest.ServiceChanges(bare, withCIDRs))
	if n.NoClusterCIDRs() {
		t.Error("nodes brought pod CIDRs, NoClusterCIDRs() still true")
	}
}
