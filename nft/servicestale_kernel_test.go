package nft

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
	"github.com/nfrouter/nfrouter/nft/svcproxy"
)

// udpClient is one UDP socket of a pod, connected to a service address:
// every datagram it sends belongs to one conntrack entry.
type udpClient struct{ c net.Conn }

func dialUDP(t *testing.T, p *netnstest.Pod, dst netip.AddrPort) *udpClient {
	t.Helper()
	var c net.Conn
	err := kerneltest.Do(p.NS, func() (err error) {
		c, err = net.Dial("udp", dst.String())
		return err
	})
	if err != nil {
		t.Fatalf("%s: dial udp %s: %v", p.Name, dst, err)
	}
	t.Cleanup(func() { c.Close() })
	return &udpClient{c}
}

// ask sends one datagram and returns the name of who answered, or an error
// (a refused or unanswered datagram).
func (u *udpClient) ask(timeout time.Duration) (string, error) {
	u.c.SetDeadline(time.Now().Add(timeout))
	if _, err := u.c.Write([]byte("?")); err != nil {
		return "", err
	}
	buf := make([]byte, 64)
	n, err := u.c.Read(buf)
	if err != nil {
		return "", err
	}
	name, _, _ := strings.Cut(string(buf[:n]), " ")
	return name, nil
}

// TestKernelServiceUDPEndpointReplaced: a UDP client that keeps sending
// from one socket while its endpoint is replaced reaches the new endpoint
// right after the sync that replaced it. The old endpoint still answers
// (a pod that is no longer an endpoint may live on), so only the deleted
// conntrack entry can move the client.
func TestKernelServiceUDPEndpointReplaced(t *testing.T) {
	bed := newSvcBed(t, false)
	dns := webPort("dns", vip4, vip6)
	dns.Key.Protocol, dns.Port = model.UDP, 53
	dns.NodePort = 30053
	bed.setService(t, dns, bed.endpointsOf("b1"))
	targets := []struct {
		from *netnstest.Pod
		dst  netip.AddrPort
	}{
		{bed.client, netip.AddrPortFrom(vip4, 53)},
		{bed.client, netip.AddrPortFrom(vip6, 53)},
		{bed.outside, netip.AddrPortFrom(bed.nodeIPs[0], 30053)},
	}
	var clients []*udpClient
	for _, tg := range targets {
		u := dialUDP(t, tg.from, tg.dst)
		for range 3 {
			if name, err := u.ask(netnstest.AllowedTimeout); err != nil || name != "b1" {
				t.Fatalf("%s -> %s: %q, %v; want b1", tg.from.Name, tg.dst, name, err)
			}
		}
		clients = append(clients, u)
	}
	bed.setService(t, dns, bed.endpointsOf("b2"))
	for i, u := range clients {
		if name, err := u.ask(netnstest.AllowedTimeout); err != nil || name != "b2" {
			t.Errorf("%s -> %s after b1 was replaced by b2: %q, %v; want b2 at once", targets[i].from.Name, targets[i].dst, name, err)
		}
	}

	t.Run("an address that gets its first endpoint", func(t *testing.T) {
		// Before the service exists its address is routed out (to the
		// outside namespace, which answers port-unreachable): conntrack
		// holds an untranslated flow, which DNAT never sees again.
		vip := netip.MustParseAddr("10.96.0.40")
		u := dialUDP(t, bed.client, netip.AddrPortFrom(vip, 53))
		if name, err := u.ask(time.Second); err == nil {
			t.Fatalf("an address no service has answered (%s)", name)
		}
		late := webPort("late", vip)
		late.Key.Protocol, late.Port = model.UDP, 53
		bed.setService(t, late, bed.endpointsOf("b3"))
		if name, err := u.ask(netnstest.AllowedTimeout); err != nil || name != "b3" {
			t.Errorf("after the service came with b3: %q, %v; want b3", name, err)
		}
	})
}

// stickyBed is a svcBed with a TCP service of session affinity over b1..b3.
type stickyBed struct {
	*svcBed
	svc *model.ServicePort
	dst netip.AddrPort
}

func newStickyBed(t *testing.T, vip netip.Addr) *stickyBed {
	bed := newSvcBed(t, false)
	svc := webPort("sticky", vip)
	svc.AffinityTimeout = 600
	bed.setService(t, svc, bed.endpointsOf("b1", "b2", "b3"))
	return &stickyBed{bed, svc, netip.AddrPortFrom(svc.ClusterIPs[0], 80)}
}

// stuck makes n connections from the client and requires that one backend
// answered them all; it returns that backend.
func (s *stickyBed) stuck(t *testing.T, n int) string {
	t.Helper()
	got := answers(t, s.client, "tcp", s.dst, n)
	if len(got) != 1 {
		t.Fatalf("%d connections with session affinity reached %v, want one backend", n, got)
	}
	for name := range got {
		return name
	}
	return ""
}

func others(of string) []string {
	var out []string
	for _, b := range []string{"b1", "b2", "b3"} {
		if b != of {
			out = append(out, b)
		}
	}
	return out
}

// TestKernelServiceAffinityEndpointGoes: 200 connections of a client stick
// to one endpoint; removing another endpoint does not move it; removing its
// endpoint moves it at once (and it sticks to the new one), whether the
// removal is programmed by the running nfrouter, by a new one after a
// restart, or by the sync after a failed transaction.
func TestKernelServiceAffinityEndpointGoes(t *testing.T) {
	kerneltest.RequireRoot(t)
	vip := netip.MustParseAddr("10.96.0.20")
	for _, v := range []netip.Addr{vip, netip.MustParseAddr("fd00:96::20")} {
		t.Run("running "+v.String(), func(t *testing.T) {
			stickyWhileRunning(t, v)
		})
	}
	t.Run("across a restart", func(t *testing.T) {
		s := newStickyBed(t, vip)
		first := s.stuck(t, 200)
		// nfrouter stops; the endpoint goes; a new nfrouter starts on the
		// table (and the clients' affinity) the old one left.
		remaining := others(first)
		s.st.Endpoints = s.st.Endpoints.With(s.svc.Key, s.endpointsOf(remaining...))
		s.b = newBackendIn(t, s.node.NS, func(tbl *ruleset.Table) Part {
			p, err := NewServiceProxy(tbl, ServiceProxyConfig{NodeName: "node-a", NetNSFd: int(s.node.NS)})
			if err != nil {
				t.Fatal(err)
			}
			return p
		})
		syncOK(t, s.b, s.st.State, &model.Changes{Full: true})
		if got := s.stuck(t, 50); got == first {
			t.Fatalf("after a restart without %s the client still reached it", first)
		}
	})
	t.Run("after a failed transaction", func(t *testing.T) {
		s := newStickyBed(t, vip)
		first := s.stuck(t, 200)
		// Take the element the removal deletes out of the kernel behind
		// nfrouter's back: the transaction that removes the endpoint fails
		// (ENOENT) and the kernel keeps the old state.
		removeKernelElement(t, s, first)
		next := s.st.Clone()
		next.Endpoints = model.MapOf(map[model.ServicePortKey]model.Endpoints{s.svc.Key: s.endpointsOf(others(first)...)})
		ch := &model.Changes{}
		ch.Endpoints.Add(s.svc.Key)
		if err := s.b.Sync(t.Context(), next.State, ch); err == nil {
			t.Fatal("the sync removing the endpoint succeeded; the test needs it to fail")
		}
		s.st = next
		syncOK(t, s.b, s.st.State, &model.Changes{})
		if got := s.stuck(t, 50); got == first {
			t.Fatalf("after a failed transaction and the next sync, the client still reached %s", first)
		}
	})
}

// stickyWhileRunning: the client sticks; removing another endpoint does
// not move it; removing its own moves it to one that it sticks to.
func stickyWhileRunning(t *testing.T, vip netip.Addr) {
	s := newStickyBed(t, vip)
	first := s.stuck(t, 200)
	rest := others(first)
	s.setService(t, s.svc, s.endpointsOf(first, rest[0]))
	if got := s.stuck(t, 50); got != first {
		t.Fatalf("removing %s moved the client from %s to %s", rest[1], first, got)
	}
	s.setService(t, s.svc, s.endpointsOf(rest[0]))
	if got := s.stuck(t, 50); got != rest[0] {
		t.Fatalf("after %s went the client reached %s, want %s", first, got, rest[0])
	}
}

// removeKernelElement deletes backend name's element from the service's
// affinity endpoint set in the kernel.
func removeKernelElement(t *testing.T, s *stickyBed, name string) {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(s.node.NS)))
	if err != nil {
		t.Fatal(err)
	}
	tbl := &nftables.Table{Family: nftables.TableFamilyINet, Name: TableName}
	set, err := c.GetSetByName(tbl, svcproxy.AffinityEndpointsSet(s.svc.Key, false, 600*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	elems, err := c.GetSetElements(set)
	if err != nil {
		t.Fatal(err)
	}
	addr := s.backends[name].IPs[0].AsSlice()
	for _, e := range elems {
		if len(e.Key) >= 4 && netip.AddrFrom4([4]byte(e.Key[:4])) == netip.AddrFrom4([4]byte(addr)) {
			if err := c.SetDeleteElements(set, []nftables.SetElement{{Key: e.Key}}); err != nil {
				t.Fatal(err)
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no element of %s in %s", name, set.Name)
}
