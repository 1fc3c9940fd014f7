package ipvs

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/model"
)

// TestKernelTopology connects through a real IPVS cluster IP whose
// endpoints carry zone hints, from a pod of a node in zone a: only the
// zone-a endpoint answers while it is ready, the zone-b ones when it is not.
//
//	node ns (zone a): kube-dummy-if 10.96.0.10; IPVS 10.96.0.10:80
//	         veth-a 10.1.0.1/24  <->  a1: 10.1.0.2 (zone a), server on :8080
//	         veth-b 10.3.0.1/24  <->  b1: 10.3.0.2 (zone b)
//	         veth-d 10.4.0.1/24  <->  b2: 10.4.0.2 (zone b)
//	         veth-c 10.2.0.1/24  <->  client ns:  10.2.0.2 (a pod)
func TestKernelTopology(t *testing.T) {
	kp := newKernelProxy(t, time.Minute)
	ctx := context.Background()
	enableForwarding(t, kp.ns)
	for _, b := range []struct{ name, nodeIf, gw, addr string }{
		{"a1", "veth-a", "10.1.0.1", "10.1.0.2"}, {"b1", "veth-b", "10.3.0.1", "10.3.0.2"}, {"b2", "veth-d", "10.4.0.1", "10.4.0.2"},
	} {
		serveNameIn(t, backendNS(t, kp.ns, b.nodeIf, b.gw, b.addr), b.name, b.addr+":8080")
	}
	client := backendNS(t, kp.ns, "veth-c", "10.2.0.1", "10.2.0.2")

	hinted := func(spec, zone string) model.Endpoint {
		e := ep(spec, "rs")
		e.Zone, e.Hints = zone, &model.EndpointHints{ForZones: []string{zone}}
		return e
	}
	all := model.Endpoints{hinted("10.1.0.2:8080@"+thisNode, "a"), hinted("10.3.0.2:8080@node-b", "b"), hinted("10.4.0.2:8080@node-b", "b")}
	web := svc("default", "web", 80, clusterIPs("10.96.0.10"))
	node := *testNode
	node.Zone = "a"
	st := newState(&node, []*model.ServicePort{web}, map[model.ServicePortKey]model.Endpoints{web.Key: all})
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "sync IPVS")

	answers := func(n int) map[string]bool {
		t.Helper()
		got := map[string]bool{}
		for range n {
			b, err := readFrom(client, "10.96.0.10:80", 20*time.Second)
			mustNoErr(t, err, "pod to the cluster IP")
			got[b] = true
		}
		return got
	}
	// IPVS's rr scheduler takes the destinations in turn, so six
	// connections reach every destination there is.
	if got := answers(6); !maps.Equal(got, map[string]bool{"a1": true}) {
		t.Errorf("zone a has an endpoint: answered by %v, want a1 only", slices.Sorted(maps.Keys(got)))
	}
	gone := slices.Clone(all)
	gone[0].Ready = false
	st.Endpoints = st.Endpoints.With(web.Key, gone)
	mustNoErr(t, kp.Sync(ctx, st, changesOf(nil, []model.ServicePortKey{web.Key})), "sync IPVS")
	if got := answers(6); !maps.Equal(got, map[string]bool{"b1": true, "b2": true}) {
		t.Errorf("zone a has no endpoint: answered by %v, want b1 and b2", slices.Sorted(maps.Keys(got)))
	}
}
