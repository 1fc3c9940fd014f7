package ipvs

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/model"
)

// Scale of the benchmarks: 10,000 ClusterIP services of 10 endpoints each.
const (
	benchServices  = 10_000
	benchEndpoints = 10
)

// scaleState returns benchServices services of benchEndpoints endpoints.
func scaleState(services, endpoints int) *model.State {
	var ports []*model.ServicePort
	eps := map[model.ServicePortKey]model.Endpoints{}
	for i := range services {
		cip := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)})
		sp := svc("bench", fmt.Sprintf("svc-%d", i), 80, func(sp *model.ServicePort) { sp.ClusterIPs = []netip.Addr{cip} })
		ports = append(ports, sp)
		var e model.Endpoints
		for j := range endpoints {
			n := i*endpoints + j
			addr := netip.AddrFrom4([4]byte{10, byte(128 + n>>16), byte(n >> 8), byte(n)})
			e = append(e, model.Endpoint{Addr: addr, Port: 8080, Node: "node-b",
				EndpointConditions: model.EndpointConditions{Ready: true, Serving: true}})
		}
		slices.SortFunc(e, func(a, b model.Endpoint) int { return a.Addr.Compare(b.Addr) })
		eps[sp.Key] = e
	}
	return newState(testNode, ports, eps)
}

// benchColdStart measures one full sync of the scale state into an empty
// kernel made by fresh.
func benchColdStart(b *testing.B, fresh func(b *testing.B) syncer) {
	st := scaleState(benchServices, benchEndpoints)
	b.ResetTimer()
	var ops int
	for range b.N {
		b.StopTimer()
		p := fresh(b)
		b.StartTimer()
		if err := p.Sync(context.Background(), st, &model.Changes{Full: true}); err != nil {
			b.Fatal(err)
		}
		ops = p.LastStats().Total()
	}
	b.ReportMetric(float64(ops), "netlink-ops/op")
}

// benchEndpointChange measures incremental syncs that each add or remove
// one endpoint of one service, on a kernel programmed with the scale state.
func benchEndpointChange(b *testing.B, p syncer) {
	ctx := context.Background()
	st := scaleState(benchServices, benchEndpoints)
	if err := p.Sync(ctx, st, &model.Changes{Full: true}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	maxOps, totalOps := 0, 0
	for i := range b.N {
		b.StopTimer()
		k := model.ServicePortKey{Namespace: "bench", Name: fmt.Sprintf("svc-%d", (i/2)%benchServices), Protocol: model.TCP}
		next := *st
		next.Endpoints = st.Endpoints
		if i%2 == 0 { // remove the first endpoint; the next iteration adds it back
			next.Endpoints = next.Endpoints.With(k, st.Endpoints.Get(k)[1:])
		}
		c := &model.Changes{}
		c.Endpoints.Add(k)
		b.StartTimer()
		if err := p.Sync(ctx, &next, c); err != nil {
			b.Fatal(err)
		}
		n := p.LastStats().Total()
		totalOps += n
		maxOps = max(maxOps, n)
	}
	b.ReportMetric(float64(totalOps)/float64(b.N), "netlink-ops/op")
	b.ReportMetric(float64(maxOps), "max-netlink-ops")
}

type syncer interface {
	Sync(context.Context, *model.State, *model.Changes) error
	LastStats() Stats
}

// Against the fake kernel (host): plan and applier cost, and operation
// counts, without the kernel's.
func BenchmarkFakeColdStart(b *testing.B) {
	benchColdStart(b, func(b *testing.B) syncer { return newFakeProxy(b, time.Minute) })
}

func BenchmarkFakeEndpointChange(b *testing.B) {
	benchEndpointChange(b, newFakeProxy(b, time.Minute))
}

// Against IPVS (VM tier; skipped on a host without IPVS).
func BenchmarkKernelColdStart(b *testing.B) {
	benchColdStart(b, func(b *testing.B) syncer { return newKernelProxy(b, time.Minute) })
}

func BenchmarkKernelEndpointChange(b *testing.B) {
	benchEndpointChange(b, newKernelProxy(b, time.Minute))
}
