package model

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

func pod(name, ip string, labels map[string]string) *Pod {
	return &Pod{Namespace: "ns", Name: name, Node: "n1", IPs: []netip.Addr{netip.MustParseAddr(ip)}, Labels: labels}
}

func TestStoreReportsOnlyRealChanges(t *testing.T) {
	s := NewStore(nil)
	key := PodKey{"ns", "a"}
	if !s.SetPod(key, pod("a", "10.0.0.1", map[string]string{"app": "x"})) {
		t.Fatal("adding a pod was not a change")
	}
	if s.SetPod(key, pod("a", "10.0.0.1", map[string]string{"app": "x"})) {
		t.Error("setting an equal pod was a change")
	}
	state, changes := s.Snapshot()
	if !changes.Pods.Has(key) || changes.Len() != 1 || changes.Since.IsZero() {
		t.Errorf("changes = %+v, want just %v", changes, key)
	}
	if state.Pods.Len() != 1 {
		t.Errorf("state has %d pods", state.Pods.Len())
	}
	if _, c := s.Snapshot(); !c.Empty() || !c.Since.IsZero() {
		t.Errorf("second snapshot has changes %+v", c)
	}
	if s.SetPod(PodKey{"ns", "missing"}, nil) {
		t.Error("deleting an absent pod was a change")
	}
}

func TestSnapshotsAreImmutableAndRevertsAreDropped(t *testing.T) {
	s := NewStore(nil)
	a := PodKey{"ns", "a"}
	s.SetPod(a, pod("a", "10.0.0.1", nil))
	first, _ := s.Snapshot()

	s.SetPod(a, pod("a", "10.0.0.2", nil))
	s.SetPod(PodKey{"ns", "b"}, pod("b", "10.0.0.3", nil))
	if got := first.Pods.Get(a).IPs[0].String(); got != "10.0.0.1" || first.Pods.Len() != 1 {
		t.Fatalf("an earlier snapshot changed: %s, %d pods", got, first.Pods.Len())
	}
	// Undo both changes before the next snapshot: nothing is left to sync.
	s.SetPod(a, pod("a", "10.0.0.1", nil))
	s.SetPod(PodKey{"ns", "b"}, nil)
	if _, c := s.Snapshot(); !c.Empty() {
		t.Errorf("reverted changes reported: %+v", c)
	}
}

func TestEndpointsJoinSlicesOfProxiedServicesOnly(t *testing.T) {
	s := NewStore(nil)
	svc := ServiceKey{"ns", "web"}
	port := &ServicePort{Key: ServicePortKey{"ns", "web", "http", TCP}, ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.1")}, Port: 80}
	ready := EndpointConditions{Ready: true, Serving: true}
	sliceA := &EndpointSlice{Service: svc, Ports: []SlicePort{{"http", TCP, 8080}}, Endpoints: []SliceEndpoint{{Addr: netip.MustParseAddr("10.0.0.2"), Conditions: ready}}}
	sliceB := &EndpointSlice{Service: svc, Ports: []SlicePort{{"http", TCP, 8080}}, Endpoints: []SliceEndpoint{
		{Addr: netip.MustParseAddr("10.0.0.1"), Conditions: ready},
		{Addr: netip.MustParseAddr("10.0.0.2"), Conditions: EndpointConditions{Terminating: true}}, // moving between slices
	}}

	// A slice that arrives before its service changes nothing yet.
	if s.SetEndpointSlice(SliceKey{"ns", "web-a"}, sliceA) {
		t.Error("slice of an unknown service was a change")
	}
	if !s.SetService(svc, []*ServicePort{port}) {
		t.Fatal("adding the service was not a change")
	}
	if !s.SetEndpointSlice(SliceKey{"ns", "web-b"}, sliceB) {
		t.Fatal("second slice was not a change")
	}
	state, c := s.Snapshot()
	eps := state.Endpoints.Get(port.Key)
	if len(eps) != 2 || eps[0].Addr.String() != "10.0.0.1" || !eps[1].Ready || eps[1].Port != 8080 {
		t.Errorf("endpoints = %+v, want 10.0.0.1 and a ready 10.0.0.2 on 8080", eps)
	}
	if !c.Endpoints.Has(port.Key) || !c.ServicePorts.Has(port.Key) {
		t.Errorf("changes = %+v", c)
	}

	// The service turns headless: its ports and endpoints go, slices stay quiet.
	if !s.SetService(svc, nil) {
		t.Fatal("removing the service was not a change")
	}
	state, c = s.Snapshot()
	if state.ServicePorts.Len() != 0 || state.Endpoints.Len() != 0 || !c.Endpoints.Has(port.Key) {
		t.Errorf("after removal: state %+v changes %+v", state, c)
	}
	if s.SetEndpointSlice(SliceKey{"ns", "web-a"}, nil) {
		t.Error("deleting a slice of an unproxied service was a change")
	}
}

// TestRandomTransitions drives the store through random sequences of pod
// writes and checks after each snapshot that the state equals the writes
// applied and the changes equal the difference from the previous state.
func TestRandomTransitions(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	s := NewStore(nil)
	want := map[PodKey]*Pod{}
	prev := map[PodKey]*Pod{}
	for round := 0; round < 200; round++ {
		for i := rng.IntN(20); i > 0; i-- {
			name := fmt.Sprintf("p%d", rng.IntN(10))
			key := PodKey{"ns", name}
			if rng.IntN(3) == 0 {
				s.SetPod(key, nil)
				delete(want, key)
				continue
			}
			p := pod(name, fmt.Sprintf("10.0.0.%d", rng.IntN(3)+1), map[string]string{"v": fmt.Sprint(rng.IntN(2))})
			s.SetPod(key, p)
			want[key] = p
		}
		state, c := s.Snapshot()
		if state.Pods.Len() != len(want) {
			t.Fatalf("round %d: %d pods, want %d", round, state.Pods.Len(), len(want))
		}
		for k, p := range want {
			if !state.Pods.Get(k).Equal(p) {
				t.Fatalf("round %d: pod %v = %+v, want %+v", round, k, state.Pods.Get(k), p)
			}
		}
		for _, k := range []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"} {
			key := PodKey{"ns", k}
			differs := !prev[key].Equal(want[key])
			if c.Pods.Has(key) != differs {
				t.Fatalf("round %d: change of %v reported %v, want %v", round, key, c.Pods.Has(key), differs)
			}
		}
		prev = make(map[PodKey]*Pod, len(want))
		for k, v := range want {
			prev[k] = v
		}
	}
}

func TestChangesOnlyFiltersKinds(t *testing.T) {
	var c Changes
	c.Pods.Add(PodKey{"ns", "a"})
	c.Endpoints.Add(ServicePortKey{Namespace: "ns", Name: "s"})
	c.Since = time.Unix(1, 0)
	proxy := c.Only(KindServicePorts | KindEndpoints | KindNodes)
	if proxy.Len() != 1 || proxy.Since.IsZero() {
		t.Errorf("proxy view = %+v", proxy)
	}
	if fw := c.Only(KindNodes); !fw.Empty() || !fw.Since.IsZero() {
		t.Errorf("nodes view = %+v, want empty", fw)
	}
}

// TestTriggerTimes checks that a snapshot carries the earliest trigger time
// of the endpoint changes of each service, and only while its endpoints
// still differ.
func TestTriggerTimes(t *testing.T) {
	s := NewStore(nil)
	svc := ServiceKey{"ns", "web"}
	port := &ServicePort{Key: ServicePortKey{"ns", "web", "http", TCP}, ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.1")}, Port: 80}
	s.SetService(svc, []*ServicePort{port})
	s.Snapshot()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	slice := func(ip string, trigger time.Time) *EndpointSlice {
		return &EndpointSlice{Service: svc, Ports: []SlicePort{{"http", TCP, 8080}}, TriggerTime: trigger,
			Endpoints: []SliceEndpoint{{Addr: netip.MustParseAddr(ip), Conditions: EndpointConditions{Ready: true, Serving: true}}}}
	}
	s.SetEndpointSlice(SliceKey{"ns", "web-a"}, slice("10.0.0.2", t0.Add(time.Second)))
	s.SetEndpointSlice(SliceKey{"ns", "web-b"}, slice("10.0.0.3", t0))
	s.SetEndpointSlice(SliceKey{"ns", "web-a"}, slice("10.0.0.4", t0.Add(2*time.Second)))
	_, c := s.Snapshot()
	if got := c.TriggerTimes[svc]; !got.Equal(t0) {
		t.Errorf("trigger time %v, want the earliest %v", got, t0)
	}
	if got := c.Only(KindEndpoints).TriggerTimes[svc]; !got.Equal(t0) {
		t.Errorf("Only(KindEndpoints) lost the trigger time: %v", got)
	}
	if got := c.Only(KindPods).TriggerTimes; got != nil {
		t.Errorf("Only(KindPods) kept trigger times %v", got)
	}
	// A change undone before the snapshot carries no trigger time.
	s.SetEndpointSlice(SliceKey{"ns", "web-b"}, slice("10.0.0.5", t0.Add(3*time.Second)))
	s.SetEndpointSlice(SliceKey{"ns", "web-b"}, slice("10.0.0.3", t0.Add(4*time.Second)))
	if _, c := s.Snapshot(); len(c.TriggerTimes) != 0 {
		t.Errorf("reverted change kept trigger times %v", c.TriggerTimes)
	}
}
