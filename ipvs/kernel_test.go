package ipvs

import (
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// TestKernelProgramsShapes programs one service of every shape (ClusterIP
// dual-stack, NodePort, external and load-balancer IPs, UDP, SCTP, sh with
// flags, persistence, internal traffic policy Local) and reads IPVS and
// kube-dummy-if back.
func TestKernelProgramsShapes(t *testing.T) {
	kp := newKernelProxy(t, 0)
	ctx := context.Background()
	st := shapesState(webEps)
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "first sync")
	kp.check(t, nil)
	if s := kp.LastStats(); s.Services != 8 || s.Destinations != 12 {
		t.Errorf("stats say %d services and %d destinations, want 8 and 12", s.Services, s.Destinations)
	}

	// Interface up, link-local address left alone.
	h := kerneltest.Handle(t, kp.ns)
	link, err := h.LinkByName(DummyInterface)
	mustNoErr(t, err, "find %s", DummyInterface)
	if link.Type() != "dummy" || link.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("%s is %s, flags %v; want an up dummy", DummyInterface, link.Type(), link.Attrs().Flags)
	}

	// Nothing to do twice; an incremental sync of one endpoint change touches
	// that service only.
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "second full sync")
	if n := writes(kp.LastStats()); n != 0 {
		t.Errorf("a second full sync wrote %v", kp.LastStats().Ops)
	}
	webKey := model.ServicePortKey{Namespace: "default", Name: "web", Protocol: model.TCP}
	added := append(slices.Clone(webEps), ep("10.1.2.9:8080@node-c", "rs"))
	slices.SortFunc(added, func(a, b model.Endpoint) int { return a.Addr.Compare(b.Addr) })
	mustNoErr(t, kp.Sync(ctx, shapesState(added), changesOf(nil, []model.ServicePortKey{webKey})), "endpoint added")
	kp.check(t, nil)
	if s := kp.LastStats(); s.Total() != 4 {
		t.Errorf("adding one endpoint made %v, want 4 operations", s.Ops)
	}

	// Everything deleted: no service, no address left.
	mustNoErr(t, kp.Sync(ctx, newState(nil, nil, nil), &model.Changes{Full: true}), "empty state")
	kp.check(t, nil)
}

func TestKernelRepairsDrift(t *testing.T) {
	kp := newKernelProxy(t, 0)
	ctx := context.Background()
	st := shapesState(webEps)
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "first sync")
	k := kp.applier.ipvs
	cip := VSKey{Addr: netip.MustParseAddr("10.96.0.10"), Proto: model.TCP, Port: 80}
	dns := VSKey{Addr: netip.MustParseAddr("10.96.0.53"), Proto: model.UDP, Port: 53}
	mustNoErr(t, k.RemoveService(serviceID(dns)), "delete service by hand")
	mustNoErr(t, k.RemoveDestination(serviceID(cip), kernelDest(Dest{netip.MustParseAddr("10.1.1.3"), 8080}, 1)), "delete destination by hand")
	stray := VSKey{Addr: netip.MustParseAddr("10.96.9.9"), Proto: model.TCP, Port: 80}
	mustNoErr(t, kp.applier.addrs.Add(stray.Addr), "stray address")
	mustNoErr(t, k.CreateService(kernelService(&VirtualService{VSKey: stray, Scheduler: "rr"})), "stray service")
	mustNoErr(t, kp.applier.addrs.Delete(netip.MustParseAddr("10.96.0.53")), "delete VIP by hand")
	foreign := VSKey{Addr: netip.MustParseAddr("192.0.2.1"), Proto: model.TCP, Port: 443}
	mustNoErr(t, k.CreateService(kernelService(&VirtualService{VSKey: foreign, Scheduler: "wrr"})), "foreign service")

	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "repair")
	mustNoErr(t, k.RemoveService(serviceID(foreign)), "the foreign service must survive the repair")
	kp.check(t, nil)

	// The dummy interface deleted by hand is made again.
	h := kerneltest.Handle(t, kp.ns)
	link, err := h.LinkByName(DummyInterface)
	mustNoErr(t, err, "find %s", DummyInterface)
	mustNoErr(t, h.LinkDel(link), "delete %s", DummyInterface)
	kp.applier.addrs.(*dummyLink).index = 0
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "repair the interface")
	kp.check(t, nil)
}

// TestKernelTCPThroughClusterIP connects from the node to a ClusterIP and
// reaches a backend in another namespace, then removes the endpoint while
// the connection is open: the destination drains at weight 0 and is deleted
// when the grace period ends.
//
//	node ns: kube-dummy-if 10.96.0.10, IPVS 10.96.0.10:80 -> 10.1.0.2:8080
//	         veth-a 10.1.0.1/24  <->  pod ns: eth0 10.1.0.2/24, server on :8080
func TestKernelTCPThroughClusterIP(t *testing.T) {
	kp := newKernelProxy(t, time.Minute)
	ctx := context.Background()
	pod := backendNS(t, kp.ns, "veth-a", "10.1.0.1", "10.1.0.2")

	web := svc("default", "web", 80, clusterIPs("10.96.0.10"))
	withEndpoint := newState(testNode, []*model.ServicePort{web}, map[model.ServicePortKey]model.Endpoints{
		web.Key: {ep("10.1.0.2:8080@"+thisNode, "rs")},
	})
	mustNoErr(t, kp.Sync(ctx, withEndpoint, &model.Changes{Full: true}), "sync")

	const greeting = "hello from the backend pod"
	var ln net.Listener
	mustNoErr(t, kerneltest.Do(pod, func() (err error) {
		ln, err = net.Listen("tcp4", "10.1.0.2:8080")
		return err
	}), "listen in the pod")
	t.Cleanup(func() { ln.Close() })
	release := make(chan struct{})
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, greeting)
		<-release
	}()

	var conn net.Conn
	mustNoErr(t, kerneltest.Do(kp.ns, func() (err error) {
		conn, err = net.DialTimeout("tcp4", "10.96.0.10:80", 20*time.Second)
		return err
	}), "connect to the ClusterIP")
	defer conn.Close()
	mustNoErr(t, conn.SetDeadline(time.Now().Add(20*time.Second)), "deadline")
	buf := make([]byte, len(greeting))
	_, err := io.ReadFull(conn, buf)
	mustNoErr(t, err, "read through the ClusterIP")
	if string(buf) != greeting {
		t.Fatalf("read %q through the ClusterIP, want %q", buf, greeting)
	}

	// The endpoint goes away while the connection is open: weight 0, kept.
	cip := VSKey{Addr: netip.MustParseAddr("10.96.0.10"), Proto: model.TCP, Port: 80}
	backend := Dest{Addr: netip.MustParseAddr("10.1.0.2"), Port: 8080}
	without := newState(testNode, []*model.ServicePort{web}, nil)
	mustNoErr(t, kp.Sync(ctx, without, changesOf(nil, []model.ServicePortKey{web.Key})), "endpoint removed")
	kp.check(t, map[VSKey][]Dest{cip: {backend}})
	mustNoErr(t, kp.Drain(ctx), "drain")
	kp.check(t, map[VSKey][]Dest{cip: {backend}})

	// The grace period ends: deleted though the connection is still open.
	kp.clock.Step(time.Minute)
	mustNoErr(t, kp.Drain(ctx), "drain")
	kp.check(t, nil)
	close(release)
}

// TestKernelRemovedIdleEndpointGoesAtOnce: a destination without connections
// is deleted in the sync that removes it, grace period or not.
func TestKernelRemovedIdleEndpointGoesAtOnce(t *testing.T) {
	kp := newKernelProxy(t, time.Hour)
	ctx := context.Background()
	web := svc("default", "web", 80, clusterIPs("10.96.0.10", "fd00:96::10"))
	eps := model.Endpoints{ep("10.1.0.2:8080", "rs"), ep("10.1.0.3:8080", "rs"), ep("[fd00:10::2]:8080", "rs")}
	st := newState(testNode, []*model.ServicePort{web}, map[model.ServicePortKey]model.Endpoints{web.Key: eps})
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "sync")
	st2 := newState(testNode, []*model.ServicePort{web}, map[model.ServicePortKey]model.Endpoints{web.Key: {eps[0]}})
	mustNoErr(t, kp.Sync(ctx, st2, changesOf(nil, []model.ServicePortKey{web.Key})), "endpoints removed")
	kp.check(t, nil)
	if s := kp.LastStats(); s.Draining != 0 || s.Ops["remove_destination"] != 2 {
		t.Errorf("removing two idle endpoints made %v, draining %d; want 2 removals and none draining", s.Ops, s.Draining)
	}
}
