package ipvs

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nfrouter/nfrouter/model"
)

type recordedEvent struct {
	svc                   model.ServiceKey
	kind, reason, message string
}

type eventLog struct{ events []recordedEvent }

func (e *eventLog) NodeEvent(node, eventType, reason, message string) {
	e.events = append(e.events, recordedEvent{model.ServiceKey{Name: "node/" + node}, eventType, reason, message})
}

func (e *eventLog) ServiceEvent(svc model.ServiceKey, eventType, reason, message string) {
	e.events = append(e.events, recordedEvent{svc, eventType, reason, message})
}

type fakeProxy struct {
	*Proxy
	kernel *fakeKernel
	clock  *clocktesting.FakeClock
	events *eventLog
}

func newFakeProxy(t testing.TB, grace time.Duration) *fakeProxy {
	t.Helper()
	k := newFakeKernel()
	c := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	ev := &eventLog{}
	p, err := New(Config{PlanConfig: PlanConfig{NodeName: thisNode}, GracePeriod: grace, Clock: c,
		IPVS: k, Addresses: k.addresses(), SysctlRoot: "-", Events: ev, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeProxy{Proxy: p, kernel: k, clock: c, events: ev}
}

func (fp *fakeProxy) sync(t testing.TB, st *model.State, c *model.Changes) Stats {
	t.Helper()
	if err := fp.Sync(context.Background(), st, c); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return fp.LastStats()
}

func (fp *fakeProxy) check(t testing.TB, draining map[VSKey][]Dest) {
	t.Helper()
	if got, want := dumpKernel(t, fp.kernel, fp.kernel.addresses()), dumpWant(fp.planner, draining); got != want {
		t.Errorf("kernel holds\n%s\nwant\n%s", got, want)
	}
}

// writes counts the operations that change the kernel.
func writes(s Stats) int {
	n := 0
	for op, c := range s.Ops {
		if !slices.Contains([]string{"list_services", "list_destinations", "list_addresses", "ensure_interface"}, op) {
			n += c
		}
	}
	return n
}

// shapesState holds one service of every shape.
func shapesState(eps model.Endpoints) *model.State {
	node := &model.Node{Name: thisNode, InternalIPs: addrs("192.168.1.10", "fd00:1::10")}
	web := svc("default", "web", 80, clusterIPs("10.96.0.10", "fd00:96::10"), func(sp *model.ServicePort) {
		sp.NodePort = 30080
		sp.ExternalIPs = addrs("198.51.100.7")
		sp.LoadBalancerIPs = addrs("198.51.100.80")
		sp.AffinityTimeout = 600
		sp.Options.Scheduler, sp.Options.SchedFlags = "sh", "flag-1,flag-2"
	})
	dns := svc("kube-system", "dns", 53, clusterIPs("10.96.0.53"), proto(model.UDP, "dns"))
	sig := svc("telco", "sig", 3868, clusterIPs("10.96.0.70"), proto(model.SCTP, ""), func(sp *model.ServicePort) {
		sp.InternalTrafficLocal = true
	})
	return newState(node, []*model.ServicePort{web, dns, sig}, map[model.ServicePortKey]model.Endpoints{
		web.Key: eps,
		dns.Key: {ep("10.1.0.5:53@node-b", "rs")},
		sig.Key: {ep("10.1.0.7:3868@"+thisNode, "rs")},
	})
}

var webEps = model.Endpoints{
	ep("10.1.0.2:8080@"+thisNode, "rs"), ep("10.1.1.3:8080@node-b", "rs"),
	ep("[fd00:10::2]:8080@"+thisNode, "rs"),
}

func TestProxyProgramsShapesAndIsIdempotent(t *testing.T) {
	fp := newFakeProxy(t, 0)
	st := shapesState(webEps)
	fp.sync(t, st, &model.Changes{Full: true})
	fp.check(t, nil)
	if n := len(fp.kernel.services); n != 8 {
		t.Errorf("%d services programmed, want 8", n)
	}
	if s := fp.sync(t, st, &model.Changes{}); s.Total() != 0 {
		t.Errorf("a sync without changes made %v", s.Ops)
	}
	if s := fp.sync(t, st, &model.Changes{Full: true}); writes(s) != 0 {
		t.Errorf("a second full sync wrote %v", s.Ops)
	}
}

func TestOneEndpointChangeCostsConstantOperations(t *testing.T) {
	fp := newFakeProxy(t, time.Minute)
	st := shapesState(webEps)
	fp.sync(t, st, &model.Changes{Full: true})
	webKey := model.ServicePortKey{Namespace: "default", Name: "web", Protocol: model.TCP}
	added := append(slices.Clone(webEps), ep("10.1.2.9:8080@node-c", "rs"))
	slices.SortFunc(added, func(a, b model.Endpoint) int { return a.Addr.Compare(b.Addr) })
	s := fp.sync(t, shapesState(added), changesOf(nil, []model.ServicePortKey{webKey}))
	fp.check(t, nil)
	// The endpoint is a destination of the cluster IP, the external IP, the
	// load-balancer IP and the IPv4 NodePort: one creation each, nothing else.
	if s.Total() != 4 || s.Ops["create_destination"] != 4 {
		t.Errorf("adding one endpoint made %v, want 4 create_destination", s.Ops)
	}
}

func TestGracefulTermination(t *testing.T) {
	fp := newFakeProxy(t, time.Minute)
	st := shapesState(webEps)
	fp.sync(t, st, &model.Changes{Full: true})
	webKey := model.ServicePortKey{Namespace: "default", Name: "web", Protocol: model.TCP}
	cip := VSKey{Addr: netip.MustParseAddr("10.96.0.10"), Proto: model.TCP, Port: 80}
	gone := Dest{Addr: netip.MustParseAddr("10.1.1.3"), Port: 8080}
	fp.kernel.setConnections(cip, gone, 1, 2)

	// Removed: weight 0 while connections last, wherever it has some.
	fewer := model.Endpoints{webEps[0], webEps[2]}
	s := fp.sync(t, shapesState(fewer), changesOf(nil, []model.ServicePortKey{webKey}))
	fp.check(t, map[VSKey][]Dest{cip: {gone}})
	if s.Draining != 1 {
		t.Errorf("%d destinations draining, want 1", s.Draining)
	}
	// Drains when its connections end.
	if err := fp.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	fp.check(t, map[VSKey][]Dest{cip: {gone}})
	fp.kernel.setConnections(cip, gone, 0, 0)
	if err := fp.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	fp.check(t, nil)

	// Comes back while draining: weight 1 again.
	fp.sync(t, st, changesOf(nil, []model.ServicePortKey{webKey}))
	fp.kernel.setConnections(cip, gone, 5, 0)
	fp.sync(t, shapesState(fewer), changesOf(nil, []model.ServicePortKey{webKey}))
	fp.check(t, map[VSKey][]Dest{cip: {gone}})
	fp.sync(t, st, changesOf(nil, []model.ServicePortKey{webKey}))
	fp.check(t, nil)

	// Deleted when the grace period ends, connections or not.
	fp.sync(t, shapesState(fewer), changesOf(nil, []model.ServicePortKey{webKey}))
	fp.clock.Step(59 * time.Second)
	if err := fp.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	fp.check(t, map[VSKey][]Dest{cip: {gone}})
	fp.clock.Step(time.Second)
	if err := fp.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	fp.check(t, nil)
	if fp.LastStats().Draining != 0 {
		t.Errorf("%d still draining", fp.LastStats().Draining)
	}
}

func TestFullSyncRepairsDrift(t *testing.T) {
	fp := newFakeProxy(t, 0)
	st := shapesState(webEps)
	fp.sync(t, st, &model.Changes{Full: true})
	k := fp.kernel
	cip := VSKey{Addr: netip.MustParseAddr("10.96.0.10"), Proto: model.TCP, Port: 80}
	dns := VSKey{Addr: netip.MustParseAddr("10.96.0.53"), Proto: model.UDP, Port: 53}
	ext := VSKey{Addr: netip.MustParseAddr("198.51.100.7"), Proto: model.TCP, Port: 80}
	// By hand: a service deleted, a destination deleted, a scheduler and a
	// weight changed, a VIP deleted, a stray service and address on our
	// interface, a stale NodePort, and someone else's service.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(k.RemoveService(serviceID(dns)))
	must(k.RemoveDestination(serviceID(cip), kernelDest(Dest{netip.MustParseAddr("10.1.1.3"), 8080}, 1)))
	extSvc := kernelService(fp.planner.Service(ext))
	extSvc.Scheduler = "rr"
	must(k.UpdateService(extSvc))
	must(k.UpdateDestination(extSvc, kernelDest(Dest{netip.MustParseAddr("10.1.0.2"), 8080}, 7)))
	must(k.addresses().Delete(netip.MustParseAddr("198.51.100.80")))
	stray := VSKey{Addr: netip.MustParseAddr("10.96.9.9"), Proto: model.TCP, Port: 80}
	must(k.addresses().Add(stray.Addr))
	must(k.CreateService(kernelService(&VirtualService{VSKey: stray, Scheduler: "rr"})))
	staleNodePort := VSKey{Addr: netip.MustParseAddr("192.168.1.10"), Proto: model.TCP, Port: 31000}
	must(k.CreateService(kernelService(&VirtualService{VSKey: staleNodePort, Scheduler: "rr"})))
	foreign := VSKey{Addr: netip.MustParseAddr("192.0.2.1"), Proto: model.TCP, Port: 443}
	must(k.CreateService(kernelService(&VirtualService{VSKey: foreign, Scheduler: "wrr"})))

	fp.sync(t, st, &model.Changes{Full: true})
	if k.services[foreign] == nil {
		t.Fatal("the full sync removed a service that is not ours")
	}
	must(k.RemoveService(serviceID(foreign)))
	fp.check(t, nil)
}

func TestFailedSyncIsRepairedByTheNext(t *testing.T) {
	fp := newFakeProxy(t, 0)
	st := shapesState(webEps)
	fp.sync(t, st, &model.Changes{Full: true})
	webKey := model.ServicePortKey{Namespace: "default", Name: "web", Protocol: model.TCP}
	fp.kernel.fail = "create_destination"
	added := append(slices.Clone(webEps), ep("10.1.2.9:8080@node-c", "rs"))
	st2 := shapesState(added)
	if err := fp.Sync(context.Background(), st2, changesOf(nil, []model.ServicePortKey{webKey})); err == nil {
		t.Fatal("sync with a failing kernel succeeded")
	}
	// The runner retries with the same state and no new changes; the proxy
	// makes that sync full.
	fp.sync(t, st2, &model.Changes{})
	fp.check(t, nil)
}

func TestInvalidAnnotationEvent(t *testing.T) {
	fp := newFakeProxy(t, 0)
	sp := svc("ns", "web", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) { sp.Options.Scheduler = "lc" })
	fp.sync(t, newState(testNode, []*model.ServicePort{sp}, nil), &model.Changes{Full: true})
	bad := svc("ns", "web", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) { sp.Options.Scheduler = "fastest" })
	s := fp.sync(t, newState(testNode, []*model.ServicePort{bad}, nil), changesOf([]model.ServicePortKey{sp.Key}, nil))
	if s.Total() != 0 {
		t.Errorf("an invalid annotation made %v", s.Ops)
	}
	got := fp.kernel.services[VSKey{Addr: netip.MustParseAddr("10.96.0.10"), Proto: model.TCP, Port: 80}].svc.Scheduler
	if got != "lc" {
		t.Errorf("scheduler %q after an invalid annotation, want lc kept", got)
	}
	if len(fp.events.events) != 1 || fp.events.events[0].reason != "InvalidAnnotation" || fp.events.events[0].svc != sp.Key.Service() {
		t.Errorf("events %+v, want one InvalidAnnotation on ns/web", fp.events.events)
	}
}

// TestUDPAndSCTPDestinationsGoAtOnce: a UDP or SCTP destination does not
// drain at weight 0 (its flows do not end by themselves); it is deleted in
// the sync that removed it, connections or not, and the proxy notes the
// conntrack pass to do.
func TestUDPAndSCTPDestinationsGoAtOnce(t *testing.T) {
	fp := newFakeProxy(t, time.Minute)
	st := shapesState(webEps)
	fp.sync(t, st, &model.Changes{Full: true})
	dnsKey := model.ServicePortKey{Namespace: "kube-system", Name: "dns", Protocol: model.UDP, Port: "dns"}
	vs := VSKey{Addr: netip.MustParseAddr("10.96.0.53"), Proto: model.UDP, Port: 53}
	fp.kernel.setConnections(vs, Dest{Addr: netip.MustParseAddr("10.1.0.5"), Port: 53}, 3, 4)
	next := shapesState(webEps)
	next.Endpoints = next.Endpoints.With(dnsKey, model.Endpoints{ep("10.1.0.6:53@node-b", "rs")})
	s := fp.sync(t, next, changesOf(nil, []model.ServicePortKey{dnsKey}))
	fp.check(t, nil)
	if s.Draining != 0 || s.Ops["remove_destination"] != 1 {
		t.Errorf("replacing a UDP destination: %d draining, ops %v; want it removed at once", s.Draining, s.Ops)
	}
	if !fp.pending.flows {
		t.Error("no conntrack pass pending after a UDP destination went (fakes: none runs)")
	}
}
