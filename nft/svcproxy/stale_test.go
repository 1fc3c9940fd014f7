package svcproxy

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/internal/svcfixture"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// TestTakeStale walks a UDP service with affinity and a TCP one through
// endpoint changes and checks what each step says it left behind.
func TestTakeStale(t *testing.T) {
	udp := modeltest.Svc("default", "dns", 53, modeltest.ClusterIPs("10.96.0.10"), modeltest.Proto(model.UDP, ""), modeltest.Affinity(60))
	tcp := modeltest.Svc("default", "web", 80, modeltest.ClusterIPs("10.96.0.11"), modeltest.Affinity(60))
	ep := func(specs ...string) model.Endpoints {
		var out model.Endpoints
		for _, s := range specs {
			out = append(out, modeltest.Ep(s+"@node-b", "rs"))
		}
		return out
	}
	p := New(ruleset.NewTable("inet", "nfrouter"), Config{NodeName: svcfixture.NodeName})
	udpMap, tcpMap := AffinityMap(udp.Key, false, 60e9), AffinityMap(tcp.Key, false, 60e9)
	udpAddr := FlowAddr{17, netip.MustParseAddrPort("10.96.0.10:53")}
	steps := []struct {
		name     string
		udp, tcp model.Endpoints // nil: service absent
		want     Stale
	}{
		{"UDP service without endpoints", model.Endpoints{}, ep("10.1.0.1:80"), Stale{}},
		{"its first endpoint", ep("10.1.0.1:53"), ep("10.1.0.1:80"), Stale{Flows: true}},
		{"a second one", ep("10.1.0.1:53", "10.1.0.2:53"), ep("10.1.0.1:80"), Stale{}},
		{"one goes", ep("10.1.0.2:53"), ep("10.1.0.1:80"), Stale{Flows: true, AffinityMaps: []string{udpMap}}},
		{"replaced", ep("10.1.0.3:53"), ep("10.1.0.1:80"), Stale{Flows: true, AffinityMaps: []string{udpMap}}},
		{"TCP endpoint goes: affinity only", ep("10.1.0.3:53"), ep("10.1.0.2:80"), Stale{AffinityMaps: []string{tcpMap}}},
		{"UDP service goes", nil, ep("10.1.0.2:80"), Stale{Gone: []FlowAddr{udpAddr}, AffinityMaps: []string{udpMap}}},
	}
	prev := modeltest.NewState(nil, nil, nil)
	for _, s := range steps {
		var ports []*model.ServicePort
		eps := map[model.ServicePortKey]model.Endpoints{}
		if s.udp != nil {
			ports = append(ports, udp)
			eps[udp.Key] = s.udp
		}
		ports = append(ports, tcp)
		eps[tcp.Key] = s.tcp
		next := modeltest.NewState(nil, ports, eps)
		p.Update(next, modeltest.ServiceChanges(prev, next))
		got := p.TakeStale()
		if got.Flows != s.want.Flows || !slices.Equal(got.Gone, s.want.Gone) || !slices.Equal(got.AffinityMaps, s.want.AffinityMaps) {
			t.Errorf("%s: TakeStale() = %+v, want %+v", s.name, got, s.want)
		}
		prev = next
	}
	var targets []string
	p.FlowTargets(func(a FlowAddr, eps []netip.AddrPort) { targets = append(targets, a.Addr.String()) })
	if len(targets) != 0 {
		t.Errorf("FlowTargets after the UDP service went: %v", targets)
	}
	if got := p.AffinityEndpoints(); !slices.Equal(got[tcpMap], modeltest.Addrs("10.1.0.2")) || len(got) != 1 {
		t.Errorf("AffinityEndpoints() = %v, want %s: [10.1.0.2]", got, tcpMap)
	}
}
