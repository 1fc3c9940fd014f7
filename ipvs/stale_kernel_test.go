package ipvs

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft"
)

// staleBed is a node namespace with a real IPVS proxy and its NAT part,
// backends b1..b3 (10.1.<i>.2, each answering TCP and UDP on 8080 with its
// name) and a client pod 10.2.0.2.
type staleBed struct {
	kp       *kernelProxy
	nat      *nft.Backend
	client   netns.NsHandle
	backends map[string]string // name -> address
}

func newStaleBed(t *testing.T) *staleBed {
	kp := newKernelProxy(t, time.Minute) // TCP destinations drain for a minute
	enableForwarding(t, kp.ns)
	bed := &staleBed{kp: kp, backends: map[string]string{}}
	for i, name := range []string{"b1", "b2", "b3"} {
		addr := fmt.Sprintf("10.1.%d.2", i+1)
		ns := backendNS(t, kp.ns, "veth-"+name, fmt.Sprintf("10.1.%d.1", i+1), addr)
		serveNameIn(t, ns, name, addr+":8080")
		bed.backends[name] = addr
	}
	bed.client = backendNS(t, kp.ns, "veth-c", "10.2.0.1", "10.2.0.2")
	bed.nat = newNAT(t, kp, NATConfig{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	return bed
}

// set programs sp with the named backends as endpoints, in IPVS and in
// the NAT part, as one incremental sync (full the first time).
func (bed *staleBed) set(t *testing.T, sp *model.ServicePort, names ...string) {
	t.Helper()
	var eps model.Endpoints
	for _, n := range names {
		eps = append(eps, ep(bed.backends[n]+":8080@"+thisNode, "rs"))
	}
	st := newState(testNode, []*model.ServicePort{sp}, map[model.ServicePortKey]model.Endpoints{sp.Key: eps})
	ch := changesOf(nil, []model.ServicePortKey{sp.Key})
	mustNoErr(t, bed.kp.Sync(context.Background(), st, ch), "sync IPVS")
	mustNoErr(t, bed.nat.Sync(context.Background(), st, ch), "sync nftables")
}

// udpFlow opens a UDP socket from ns to addr, closed when the test ends,
// and returns a function that sends one datagram on it (always the same
// flow) and returns the answer, waiting up to timeout.
func udpFlow(t testing.TB, from netns.NsHandle, addr string) func(timeout time.Duration) (string, error) {
	t.Helper()
	var c net.Conn
	mustNoErr(t, kerneltest.Do(from, func() (err error) {
		c, err = net.Dial("udp4", addr)
		return err
	}), "dial")
	t.Cleanup(func() { c.Close() })
	return func(timeout time.Duration) (string, error) {
		c.SetDeadline(time.Now().Add(timeout))
		if _, err := c.Write([]byte("?")); err != nil {
			return "", err
		}
		buf := make([]byte, 16)
		n, err := c.Read(buf)
		return string(buf[:n]), err
	}
}

// serveNameIn answers TCP connections and UDP datagrams to addr in ns
// with name.
func serveNameIn(t testing.TB, ns netns.NsHandle, name, addr string) {
	t.Helper()
	var ln net.Listener
	var pc net.PacketConn
	mustNoErr(t, kerneltest.Do(ns, func() (err error) {
		if ln, err = net.Listen("tcp4", addr); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp4", addr)
		return err
	}), "listen on %s", addr)
	t.Cleanup(func() { ln.Close(); pc.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, name)
			c.Close()
		}
	}()
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(name), from)
		}
	}()
}

// TestKernelUDPDestinationReplaced: a UDP client that keeps sending from
// one socket reaches the new destination right after the sync that
// replaced the old one (which still answers): the UDP destination is
// deleted at once, not drained, and its flow's conntrack entry with it.
func TestKernelUDPDestinationReplaced(t *testing.T) {
	bed := newStaleBed(t)
	dns := svc("kube-system", "dns", 53, clusterIPs("10.96.0.53"), proto(model.UDP, "dns"))
	bed.set(t, dns, "b1")
	flow := udpFlow(t, bed.client, "10.96.0.53:53")
	ask := func() (string, error) { return flow(5 * time.Second) }
	for range 3 {
		if got, err := ask(); err != nil || got != "b1" {
			t.Fatalf("UDP service answered %q, %v; want b1", got, err)
		}
	}
	bed.set(t, dns, "b2")
	bed.kp.check(t, nil) // b1 is gone, not draining
	if got, err := ask(); err != nil || got != "b2" {
		t.Errorf("after b1 was replaced by b2 the same UDP flow got %q, %v; want b2 at once", got, err)
	}
}

// TestKernelAffinityDestinationRemoved: with persistence (ClientIP
// affinity) a client sticks to one destination; removing another does not
// move it; removing its own (weight 0, draining) moves its next connection
// at once: expire_quiescent_template ends the persistence template.
func TestKernelAffinityDestinationRemoved(t *testing.T) {
	bed := newStaleBed(t)
	web := svc("default", "web", 80, clusterIPs("10.96.0.10"), func(sp *model.ServicePort) { sp.AffinityTimeout = 600 })
	bed.set(t, web, "b1", "b2", "b3")
	ask := func() string {
		t.Helper()
		got, err := readFrom(bed.client, "10.96.0.10:80", 10*time.Second)
		mustNoErr(t, err, "connect")
		return got
	}
	stuck := func(n int) string {
		t.Helper()
		seen := map[string]int{}
		for range n {
			seen[ask()]++
		}
		if len(seen) != 1 {
			t.Fatalf("%d connections with affinity reached %v, want one backend", n, seen)
		}
		for name := range seen {
			return name
		}
		return ""
	}
	first := stuck(50)
	var rest []string
	for _, b := range []string{"b1", "b2", "b3"} {
		if b != first {
			rest = append(rest, b)
		}
	}
	bed.set(t, web, first, rest[0])
	if got := stuck(20); got != first {
		t.Fatalf("removing %s moved the client from %s to %s", rest[1], first, got)
	}
	bed.set(t, web, rest[0])
	if got := stuck(20); got != rest[0] {
		t.Errorf("after %s went (draining) the client reached %s, want %s", first, got, rest[0])
	}
}

// TestKernelUDPServiceGetsFirstDestination: a UDP flow to an address that
// had no service was routed out (conntrack holds it untranslated); once a
// service with a destination has the address, the same flow reaches it.
func TestKernelUDPServiceGetsFirstDestination(t *testing.T) {
	bed := newStaleBed(t)
	// The node's route for the service range leads to b3, which does not
	// forward: a flow there is confirmed in conntrack and unanswered.
	node := kerneltest.Handle(t, bed.kp.ns)
	_, dst, _ := net.ParseCIDR("10.96.0.0/16")
	mustNoErr(t, node.RouteAdd(&netlink.Route{Dst: dst, Gw: net.ParseIP(bed.backends["b3"])}), "route the service range out")
	ask := udpFlow(t, bed.client, "10.96.0.54:53")
	if got, err := ask(time.Second); err == nil {
		t.Fatalf("an address without a service answered %q", got)
	}
	dns := svc("kube-system", "dns", 53, clusterIPs("10.96.0.54"), proto(model.UDP, "dns"))
	bed.set(t, dns, "b1")
	if got, err := ask(5 * time.Second); err != nil || got != "b1" {
		t.Errorf("after the service came with b1 the same UDP flow got %q, %v; want b1", got, err)
	}
}
