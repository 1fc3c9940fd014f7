package model

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkEndpointChange measures one EndpointSlice update followed by a
// snapshot, as the runner takes one per sync, in a store of 10,000 services ×
// 10 endpoints: the model's share of the cost of one endpoint change. Its
// B/op is garbage the collector has to clear per change.
func BenchmarkEndpointChange(b *testing.B) {
	const services, perService = 10000, 10
	s := NewStore(nil)
	slice := func(i, gen int) *EndpointSlice {
		sl := &EndpointSlice{Service: ServiceKey{"ns", fmt.Sprintf("svc-%d", i)},
			Ports: []SlicePort{{Protocol: TCP, Port: 8080}}, Endpoints: make([]SliceEndpoint, perService)}
		for j := range sl.Endpoints {
			addr := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), byte(j + 10*(gen%2))})
			sl.Endpoints[j] = SliceEndpoint{Addr: addr, Node: "node-1", Conditions: EndpointConditions{Ready: true, Serving: true}}
		}
		return sl
	}
	for i := range services {
		key := ServiceKey{"ns", fmt.Sprintf("svc-%d", i)}
		s.SetService(key, []*ServicePort{{Key: ServicePortKey{Namespace: key.Namespace, Name: key.Name, Protocol: TCP}, Port: 80}})
		s.SetEndpointSlice(SliceKey{"ns", key.Name + "-abc"}, slice(i, 0))
	}
	s.Snapshot()
	// The updates are built before the clock runs: in the agent the informer
	// decodes them, which is not the model's cost.
	changed, back := make([]*EndpointSlice, 1000), make([]*EndpointSlice, 1000)
	for i := range changed {
		changed[i], back[i] = slice(i*7%services, 1), slice(i*7%services, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// Every pass over the updates flips the endpoints back and forth.
		u := changed[i%len(changed)]
		if (i/len(changed))%2 == 1 {
			u = back[i%len(back)]
		}
		if !s.SetEndpointSlice(SliceKey{"ns", u.Service.Name + "-abc"}, u) {
			b.Fatal("update was no change")
		}
		if _, c := s.Snapshot(); c.Len() != 1 {
			b.Fatalf("%d changes, want 1", c.Len())
		}
	}
}
