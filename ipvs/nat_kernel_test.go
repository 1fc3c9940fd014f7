package ipvs

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// TestKernelNATThroughClusterIP connects through a real IPVS ClusterIP with
// the NAT part programmed next to it, and checks the source address the
// backend sees: a pod inside the cluster CIDRs keeps its own, with
// --masquerade-all it is the node's, and the node's own connection (whose
// source is the cluster IP) is masqueraded too.
//
//	node ns: kube-dummy-if 10.96.0.10, IPVS 10.96.0.10:80 -> 10.1.0.2:8080
//	         veth-a 10.1.0.1/24  <->  backend ns: eth0 10.1.0.2/24, server on :8080
//	         veth-c 10.2.0.1/24  <->  client ns:  eth0 10.2.0.2/24
func TestKernelNATThroughClusterIP(t *testing.T) {
	kp, client := newNATBed(t)
	ctx := context.Background()

	web := svc("default", "web", 80, clusterIPs("10.96.0.10"))
	st := newState(testNode, []*model.ServicePort{web}, map[model.ServicePortKey]model.Endpoints{
		web.Key: {ep("10.1.0.2:8080@"+thisNode, "rs")},
	})
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "sync IPVS")

	program := func(cfg NATConfig) {
		t.Helper()
		mustNoErr(t, newNAT(t, kp, cfg).Sync(ctx, st, &model.Changes{Full: true}), "sync nftables")
	}
	cluster := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	seen := func(what string, from netns.NsHandle, want string) {
		t.Helper()
		got, err := readFrom(from, "10.96.0.10:80", 20*time.Second)
		mustNoErr(t, err, "%s: connect to the ClusterIP", what)
		if got != want {
			t.Errorf("%s: the backend saw source %s, want %s", what, got, want)
		}
	}

	program(NATConfig{ClusterCIDRs: cluster})
	seen("pod in the cluster CIDRs", client, "10.2.0.2")
	seen("the node itself", kp.ns, "10.1.0.1")

	program(NATConfig{ClusterCIDRs: cluster, MasqueradeAll: true})
	seen("--masquerade-all: pod", client, "10.1.0.1")
}

// serveSourceIn answers every TCP connection to addr in ns with the
// connection's source address.
func serveSourceIn(t testing.TB, ns netns.NsHandle, addr string) {
	t.Helper()
	var ln net.Listener
	mustNoErr(t, kerneltest.Do(ns, func() (err error) {
		ln, err = net.Listen("tcp4", addr)
		return err
	}), "listen on %s", addr)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, netip.MustParseAddrPort(c.RemoteAddr().String()).Addr().String())
			c.Close()
		}
	}()
}

// TestKernelNATExternalAddresses checks two facts of kube-proxy's at a real
// IPVS load-balancer IP: a pod's connection to an external address of
// traffic policy Cluster is masqueraded (its endpoint may be on a third
// node), and loadBalancerSourceRanges drop clients outside the ranges.
//
//	node ns: kube-dummy-if 192.0.2.10, 192.0.2.11; IPVS :80 of each -> 10.1.0.2:8080
//	         veth-a 10.1.0.1/24  <->  backend ns: eth0 10.1.0.2/24, server on :8080
//	         veth-c 10.2.0.1/24  <->  client ns:  eth0 10.2.0.2/24 (a pod)
func TestKernelNATExternalAddresses(t *testing.T) {
	kp, client := newNATBed(t)
	ctx := context.Background()

	open := svc("default", "open", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) {
		sp.LoadBalancerIPs = addrs("192.0.2.10")
	})
	fenced := svc("default", "fenced", 80, clusterIPs("10.96.0.11"), func(sp *model.ServicePort) {
		sp.LoadBalancerIPs = addrs("192.0.2.11")
		sp.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}
	})
	eps := model.Endpoints{ep("10.1.0.2:8080@"+thisNode, "rs")}
	st := newState(testNode, []*model.ServicePort{open, fenced}, map[model.ServicePortKey]model.Endpoints{open.Key: eps, fenced.Key: eps})
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "sync IPVS")
	nat := newNAT(t, kp, NATConfig{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	mustNoErr(t, nat.Sync(ctx, st, &model.Changes{Full: true}), "sync nftables")

	ask := func(dst string, timeout time.Duration) (string, error) { return readFrom(client, dst, timeout) }
	got, err := ask("192.0.2.10:80", 20*time.Second)
	mustNoErr(t, err, "pod to the LB IP")
	if got != "10.1.0.1" {
		t.Errorf("pod to an LB IP of policy Cluster: the backend saw %s, want the node's 10.1.0.1 (masqueraded)", got)
	}
	if got, err := ask("192.0.2.11:80", 3*time.Second); err == nil {
		t.Errorf("pod outside loadBalancerSourceRanges reached the LB IP (backend saw %s); want it dropped", got)
	}
	got, err = ask("10.96.0.11:80", 20*time.Second)
	mustNoErr(t, err, "pod to the cluster IP of the restricted service")
	if got != "10.2.0.2" {
		t.Errorf("pod to a cluster IP: the backend saw %s, want the pod's own 10.2.0.2", got)
	}
}

// TestKernelNATUnallocatedServiceAddress checks that with
// --service-cluster-ip-range traffic to an address of the range that no
// virtual service has is dropped, from a pod and from the node, while the
// cluster IP keeps working from both (the node's connection passes the
// output hook after IPVS translated it) and an address outside the range,
// routed the same way, answers.
//
//	node ns: kube-dummy-if 10.96.0.10; IPVS 10.96.0.10:80 -> 10.1.0.2:8080
//	         routes 10.96.0.200/32 and 10.97.0.200/32 via 10.1.0.2
//	         veth-a 10.1.0.1/24  <->  backend ns: eth0 10.1.0.2/24, 10.96.0.200, 10.97.0.200
//	         veth-c 10.2.0.1/24  <->  client ns:  eth0 10.2.0.2/24 (a pod)
func TestKernelNATUnallocatedServiceAddress(t *testing.T) {
	kp := newKernelProxy(t, time.Minute)
	ctx := context.Background()
	enableForwarding(t, kp.ns)
	backend := backendNS(t, kp.ns, "veth-a", "10.1.0.1", "10.1.0.2")
	client := backendNS(t, kp.ns, "veth-c", "10.2.0.1", "10.2.0.2")
	bh, nh := kerneltest.Handle(t, backend), kerneltest.Handle(t, kp.ns)
	eth0, err := bh.LinkByName("eth0")
	mustNoErr(t, err, "backend eth0")
	for _, a := range []string{"10.96.0.200", "10.97.0.200"} {
		mustNoErr(t, bh.AddrAdd(eth0, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(a), Mask: net.CIDRMask(32, 32)}}), "address %s", a)
		mustNoErr(t, nh.RouteAdd(&netlink.Route{Dst: &net.IPNet{IP: net.ParseIP(a), Mask: net.CIDRMask(32, 32)}, Gw: net.ParseIP("10.1.0.2")}), "route %s", a)
		serveSourceIn(t, backend, a+":80")
	}
	serveSourceIn(t, backend, "10.1.0.2:8080")

	web := svc("default", "web", 80, clusterIPs("10.96.0.10"))
	st := newState(testNode, []*model.ServicePort{web}, map[model.ServicePortKey]model.Endpoints{web.Key: {ep("10.1.0.2:8080@"+thisNode, "rs")}})
	mustNoErr(t, kp.Sync(ctx, st, &model.Changes{Full: true}), "sync IPVS")
	nat := newNAT(t, kp, NATConfig{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}})
	mustNoErr(t, nat.Sync(ctx, st, &model.Changes{Full: true}), "sync nftables")

	for _, from := range []struct {
		name string
		ns   netns.NsHandle
	}{{"pod", client}, {"node", kp.ns}} {
		if _, err := readFrom(from.ns, "10.97.0.200:80", 20*time.Second); err != nil {
			t.Errorf("%s to an address outside the service CIDR: %v, want an answer", from.name, err)
		}
		if _, err := readFrom(from.ns, "10.96.0.10:80", 20*time.Second); err != nil {
			t.Errorf("%s to the cluster IP: %v, want an answer", from.name, err)
		}
		if got, err := readFrom(from.ns, "10.96.0.200:80", 3*time.Second); err == nil {
			t.Errorf("%s reached unallocated 10.96.0.200 (the server saw %s); want it dropped", from.name, got)
		}
	}
}

// newNATBed is the layout of the NAT tests: an IPVS proxy's node that
// forwards (the backend's replies to the client pod are un-NATed by IPVS on
// the way), a backend on 10.1.0.2:8080 that answers with the source address
// it sees, and a client pod.
func newNATBed(t *testing.T) (kp *kernelProxy, client netns.NsHandle) {
	t.Helper()
	kp = newKernelProxy(t, time.Minute)
	enableForwarding(t, kp.ns)
	backend := backendNS(t, kp.ns, "veth-a", "10.1.0.1", "10.1.0.2")
	client = backendNS(t, kp.ns, "veth-c", "10.2.0.1", "10.2.0.2")
	serveSourceIn(t, backend, "10.1.0.2:8080")
	return kp, client
}
