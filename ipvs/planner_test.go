package ipvs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
)

var testNode = &model.Node{Name: thisNode, InternalIPs: addrs("192.168.1.10", "fd00:1::10")}

func changesOf(ports, eps []model.ServicePortKey) *model.Changes {
	c := &model.Changes{}
	for _, k := range ports {
		c.ServicePorts.Add(k)
	}
	for _, k := range eps {
		c.Endpoints.Add(k)
	}
	return c
}

func TestOneEndpointChangeTouchesOneService(t *testing.T) {
	var ports []*model.ServicePort
	eps := map[model.ServicePortKey]model.Endpoints{}
	for i := range 50 {
		sp := svc("ns", fmt.Sprintf("s%d", i), 80, clusterIPs(fmt.Sprintf("10.96.0.%d", i+1)))
		ports = append(ports, sp)
		eps[sp.Key] = model.Endpoints{ep(fmt.Sprintf("10.1.0.%d:8080", i+1), "rs")}
	}
	p := NewPlanner(PlanConfig{NodeName: thisNode})
	st := newState(testNode, ports, eps)
	if res := p.Update(st, &model.Changes{Full: true}); len(res.Changed) != 50 || len(res.VIPsAdded) != 50 {
		t.Fatalf("cold start changed %d services and %d VIPs, want 50 and 50", len(res.Changed), len(res.VIPsAdded))
	}

	k := ports[7].Key
	st2 := newState(testNode, ports, eps)
	st2.Endpoints = st2.Endpoints.With(k, append(slices.Clone(eps[k]), ep("10.1.9.9:8080", "rs")))
	res := p.Update(st2, changesOf(nil, []model.ServicePortKey{k}))
	want := []VSKey{{Addr: addrs("10.96.0.8")[0], Proto: model.TCP, Port: 80}}
	if !slices.Equal(res.Changed, want) || len(res.VIPsAdded)+len(res.VIPsRemoved) != 0 {
		t.Errorf("one endpoint change: changed %v, VIPs +%v -%v; want %v and no VIP change", res.Changed, res.VIPsAdded, res.VIPsRemoved, want)
	}

	// The same change again, and a change of a key the proxy has nothing for
	// (a headless service), plan nothing.
	headless := model.ServicePortKey{Namespace: "ns", Name: "headless", Protocol: model.TCP}
	res = p.Update(st2, changesOf([]model.ServicePortKey{headless}, []model.ServicePortKey{k, headless}))
	if len(res.Changed) != 0 || len(res.Problems) != 0 {
		t.Errorf("repeated change: changed %v, problems %v; want nothing", res.Changed, res.Problems)
	}
}

func TestInvalidAnnotationKeepsPreviousProgramming(t *testing.T) {
	p := NewPlanner(PlanConfig{NodeName: thisNode})
	sp := svc("ns", "web", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) { sp.Options.Scheduler = "lc" })
	k := sp.Key
	ch := changesOf([]model.ServicePortKey{k}, nil)
	p.Update(newState(testNode, []*model.ServicePort{sp}, nil), ch)

	bad := svc("ns", "web", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) { sp.Options.Scheduler = "fastest" })
	res := p.Update(newState(testNode, []*model.ServicePort{bad}, nil), ch)
	if got := p.Services()[0].Scheduler; got != "lc" {
		t.Errorf("after an invalid scheduler the service has %q, want the previous lc", got)
	}
	if len(res.Problems) != 1 || res.Problems[0].Reason != "InvalidAnnotation" || res.Problems[0].Message == "" {
		t.Errorf("problems %+v, want one InvalidAnnotation", res.Problems)
	}
	if len(res.Changed) != 0 {
		t.Errorf("an invalid annotation changed %v, want nothing", res.Changed)
	}
	// Reported once, not on every sync.
	if res := p.Update(newState(testNode, []*model.ServicePort{bad}, nil), ch); len(res.Problems) != 0 {
		t.Errorf("the same invalid annotation reported again: %+v", res.Problems)
	}
	if p.InvalidPorts() != 1 {
		t.Errorf("InvalidPorts = %d, want 1", p.InvalidPorts())
	}

	good := svc("ns", "web", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) {
		sp.Options.Scheduler, sp.Options.SchedFlags = "sh", "flag-2"
	})
	res = p.Update(newState(testNode, []*model.ServicePort{good}, nil), ch)
	if got := p.Services()[0]; got.Scheduler != "sh" || schedFlagNames(got.Flags) != "flag-2" {
		t.Errorf("after fixing the annotation the service is %s, want sh with flag-2", got)
	}
	if len(res.Problems) != 1 || res.Problems[0].Message != "" {
		t.Errorf("problems %+v, want one resolved", res.Problems)
	}
	if p.InvalidPorts() != 0 {
		t.Errorf("InvalidPorts = %d, want 0", p.InvalidPorts())
	}
}

func TestNodeChangeReplansNodePorts(t *testing.T) {
	p := NewPlanner(PlanConfig{NodeName: thisNode})
	np := svc("ns", "np", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) { sp.NodePort = 30080 })
	plain := svc("ns", "plain", 80, clusterIPs("10.96.0.11"))
	ports := []*model.ServicePort{np, plain}
	p.Update(newState(testNode, ports, nil), &model.Changes{Full: true})

	moved := &model.Node{Name: thisNode, InternalIPs: addrs("192.168.1.20")}
	c := &model.Changes{}
	c.Nodes.Add(thisNode)
	res := p.Update(newState(moved, ports, nil), c)
	want := []VSKey{
		{Addr: addrs("192.168.1.10")[0], Proto: model.TCP, Port: 30080},
		{Addr: addrs("192.168.1.20")[0], Proto: model.TCP, Port: 30080},
	}
	if !slices.Equal(res.Changed, want) {
		t.Errorf("node address change: changed %v, want %v", res.Changed, want)
	}
	// Another node's change is none of our business.
	c = &model.Changes{}
	c.Nodes.Add("node-b")
	if res := p.Update(newState(moved, ports, nil), c); len(res.Changed) != 0 {
		t.Errorf("another node's change re-planned %v", res.Changed)
	}
}

func TestConflictHandsAddressOverWhenOwnerGoes(t *testing.T) {
	first := svc("a", "first", 80, clusterIPs("10.96.0.1"), func(sp *model.ServicePort) { sp.ExternalIPs = addrs("198.51.100.7") })
	second := svc("b", "second", 80, clusterIPs("10.96.0.2"), func(sp *model.ServicePort) { sp.ExternalIPs = addrs("198.51.100.7") })
	p := NewPlanner(PlanConfig{NodeName: thisNode})
	p.Update(newState(testNode, []*model.ServicePort{first, second}, nil), &model.Changes{Full: true})

	res := p.Update(newState(testNode, []*model.ServicePort{second}, nil), changesOf([]model.ServicePortKey{first.Key}, nil))
	ext := VSKey{Addr: addrs("198.51.100.7")[0], Proto: model.TCP, Port: 80}
	if got := p.Service(ext); got == nil || got.Owner != second.Key {
		t.Fatalf("after the owner left, %s is %v, want it owned by %s", ext, got, second.Key)
	}
	if !slices.Contains(res.Changed, ext) || !slices.Equal(res.VIPsRemoved, addrs("10.96.0.1")) || len(res.VIPsAdded) != 0 {
		t.Errorf("changed %v, VIPs +%v -%v", res.Changed, res.VIPsAdded, res.VIPsRemoved)
	}
	if len(res.Problems) != 1 || res.Problems[0].Port != second.Key || res.Problems[0].Message != "" {
		t.Errorf("problems %+v, want the conflict of %s resolved", res.Problems, second.Key)
	}
}

// TestAnyStateFollowsAnyOther walks random states with incremental updates
// and checks that the planner always wants what a fresh planner wants for the
// same state.
func TestAnyStateFollowsAnyOther(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomState := func() *model.State {
		var ports []*model.ServicePort
		eps := map[model.ServicePortKey]model.Endpoints{}
		for i := range 8 {
			if rng.IntN(3) == 0 {
				continue
			}
			sp := svc("ns", fmt.Sprintf("s%d", i), uint16(80+rng.IntN(2)), clusterIPs(fmt.Sprintf("10.96.0.%d", i+1), fmt.Sprintf("fd00:96::%d", i+1)),
				func(sp *model.ServicePort) {
					sp.Options.Scheduler = []string{"", "rr", "lc", "sh"}[rng.IntN(4)]
					if rng.IntN(2) == 0 {
						sp.NodePort = uint16(30000 + i)
					}
					if rng.IntN(3) == 0 {
						sp.ExternalIPs = addrs(fmt.Sprintf("198.51.100.%d", i+1))
					}
					sp.ExternalTrafficLocal = rng.IntN(3) == 0
					sp.InternalTrafficLocal = rng.IntN(4) == 0
					if rng.IntN(4) == 0 {
						sp.AffinityTimeout = 60
					}
				})
			ports = append(ports, sp)
			var e model.Endpoints
			for j := range rng.IntN(4) {
				nodeName := []string{thisNode, "node-b"}[rng.IntN(2)]
				e = append(e, ep(fmt.Sprintf("10.1.%d.%d:8080@%s", i, j+1, nodeName), []string{"rs", "st", "", "rs"}[rng.IntN(4)]),
					ep(fmt.Sprintf("[fd00:10::%d:%d]:8080@%s", i, j+1, nodeName), "rs"))
			}
			slices.SortFunc(e, func(a, b model.Endpoint) int { return a.Addr.Compare(b.Addr) })
			eps[sp.Key] = e
		}
		node := testNode
		if rng.IntN(4) == 0 {
			node = &model.Node{Name: thisNode, InternalIPs: addrs("192.168.1.20")}
		}
		return newState(node, ports, eps)
	}

	p := NewPlanner(PlanConfig{NodeName: thisNode})
	prev := newState(nil, nil, nil)
	for step := range 300 {
		next := randomState()
		p.Update(next, modeltest.ServiceChanges(prev, next))
		fresh := NewPlanner(PlanConfig{NodeName: thisNode})
		fresh.Update(next, &model.Changes{Full: true})
		if got, want := dumpPlanner(p), dumpPlanner(fresh); got != want {
			t.Fatalf("step %d: incremental planner wants\n%s\nfresh planner wants\n%s", step, got, want)
		}
		prev = next
	}
}
