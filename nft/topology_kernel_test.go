package nft

import (
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/model"
)

// TestKernelTopology proves topology-aware routing with real connections in
// the flow table's three-node layout: node-a and node-b are in zone a,
// node-c in zone b. A pod on node-a reaches only b1 (zone a) while it is
// ready, and both endpoints of zone b when zone a has none; once with the
// EndpointSlice controller's zone hints, once with trafficDistribution
// PreferClose and slices without hints.
func TestKernelTopology(t *testing.T) {
	bed := newFlowBed(t, "nftables")
	serveIdentity(t, bed.nodes["node-c"].AddPod("c2", netip.MustParseAddr("10.244.3.12")).NS, "c2", svcPort)
	for name, zone := range map[string]string{"node-a": "a", "node-b": "a", "node-c": "b"} {
		n := *bed.st.Nodes.Get(name)
		n.Zone = zone
		bed.st.Nodes = bed.st.Nodes.With(name, &n)
	}
	near := webPort("near", netip.MustParseAddr("10.96.0.14"))
	bed.st.ServicePorts = bed.st.ServicePorts.With(near.Key, near)
	ep := func(ip, node, zone string, hinted bool) model.Endpoint {
		e := model.Endpoint{Addr: netip.MustParseAddr(ip), Port: svcPort, Node: node, Zone: zone,
			EndpointConditions: model.EndpointConditions{Ready: true, Serving: true}}
		if hinted {
			e.Hints = &model.EndpointHints{ForZones: []string{zone}}
		}
		return e
	}
	nodeA := bed.backend["node-a"]
	// answers connects n times from client-a and returns who answered.
	answers := func(n int) map[string]bool {
		t.Helper()
		got := map[string]bool{}
		for range n {
			name, _, err := ask(bed.clients["client-a"], "tcp", netip.AddrPortFrom(near.ClusterIPs[0], near.Port), netnstest.AllowedTimeout)
			if err != nil {
				t.Fatalf("client-a -> near: %v", err)
			}
			got[name] = true
		}
		return got
	}
	for _, variant := range []struct {
		name   string
		hinted bool
		dist   model.TrafficDistribution
	}{
		{"zone hints", true, model.DistributeAuto},
		{"trafficDistribution PreferClose without hints", false, model.DistributeSameZone},
	} {
		t.Run(variant.name, func(t *testing.T) {
			sp := *near
			sp.TrafficDistribution = variant.dist
			bed.st.ServicePorts = bed.st.ServicePorts.With(near.Key, &sp)
			all := model.Endpoints{ep("10.244.2.11", "node-b", "a", variant.hinted),
				ep("10.244.3.11", "node-c", "b", variant.hinted), ep("10.244.3.12", "node-c", "b", variant.hinted)}
			bed.st.Endpoints = bed.st.Endpoints.With(near.Key, all)
			syncOK(t, nodeA, bed.st, &model.Changes{Full: true})
			// 30 connections: were zone b's endpoints chosen too, one of
			// them would answer all but certainly (1 - 3^-30).
			if got := answers(30); !maps.Equal(got, map[string]bool{"b1": true}) {
				t.Errorf("zone a has an endpoint: answered by %v, want b1 only", slices.Sorted(maps.Keys(got)))
			}

			gone := slices.Clone(all)
			gone[0].Ready = false // b1, zone a's only endpoint, is no longer ready
			bed.st.Endpoints = bed.st.Endpoints.With(near.Key, gone)
			ch := &model.Changes{}
			ch.Endpoints.Add(near.Key)
			syncOK(t, nodeA, bed.st, ch)
			// 40 connections to two endpoints: each answers at least
			// once but for a chance of 2^-39.
			if got := answers(40); !maps.Equal(got, map[string]bool{"c1": true, "c2": true}) {
				t.Errorf("zone a has no endpoint: answered by %v, want c1 and c2", slices.Sorted(maps.Keys(got)))
			}

			bed.st.Endpoints = bed.st.Endpoints.With(near.Key, all)
			syncOK(t, nodeA, bed.st, ch)
			if got := answers(30); !maps.Equal(got, map[string]bool{"b1": true}) {
				t.Errorf("zone a's endpoint is back: answered by %v, want b1 only", slices.Sorted(maps.Keys(got)))
			}
		})
	}
}
