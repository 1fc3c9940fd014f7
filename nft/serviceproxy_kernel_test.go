package nft

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
	"github.com/nfrouter/nfrouter/nft/internal/svcfixture"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// TestKernelServiceProxyRoundTrip programs every service shape of the
// planner's golden tests and checks that a full resync sends nothing, that
// nft lists exactly the rendering, and that the listing parses.
func TestKernelServiceProxyRoundTrip(t *testing.T) {
	kerneltest.RequireRoot(t)
	for _, c := range svcfixture.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			ns := kerneltest.NewNetNS(t)
			mk := func(tbl *ruleset.Table) []Part {
				p, err := NewServiceProxy(tbl, ServiceProxyConfig{NodeName: svcfixture.NodeName, NodePortBindOnAllIPs: c.BindAll, NodePortCIDRs: c.NodePortCIDRs,
					MasqueradeAll: c.MasqueradeAll, ClusterCIDRs: c.ClusterCIDRs, ServiceCIDRs: c.ServiceCIDRs, NetNSFd: int(ns)})
				if err != nil {
					t.Fatal(err)
				}
				return []Part{p}
			}
			b := newBackendIn(t, ns, func(tbl *ruleset.Table) Part { return mk(tbl)[0] })
			syncOK(t, b, c.State, &model.Changes{Full: true})
			requireRoundTrip(t, ns, b, c.State, mk)
		})
	}
}

// svcBed is a node with pods for service tests: a client pod, backend pods
// b1..b3 on node-a answering TCP and UDP on 8080 with their name and the
// source address they see, and a namespace outside the cluster routed
// through the node, whose addresses the node holds as its node IPs.
type svcBed struct {
	node     *netnstest.Node
	b        *Backend
	st       fixture.State
	client   *netnstest.Pod
	outside  *netnstest.Pod
	backends map[string]*netnstest.Pod
	nodeIPs  []netip.Addr
}

const svcPort = 8080

func newSvcBed(t *testing.T, firewall bool) *svcBed {
	node := netnstest.NewNode(t)
	bed := &svcBed{node: node, st: fixture.New(), backends: map[string]*netnstest.Pod{},
		nodeIPs: modeltest.Addrs("192.168.50.1", "fd00:50::1")}
	bed.st.ServicePorts = model.Map[model.ServicePortKey, *model.ServicePort]{}
	bed.st.Endpoints = model.Map[model.ServicePortKey, model.Endpoints]{}
	bed.st.Nodes = bed.st.Nodes.With("node-a", &model.Node{Name: "node-a", InternalIPs: bed.nodeIPs,
		PodCIDRs: prefixesOf("10.244.1.0/24", "fd00:1::/64")})
	bed.st.Namespaces = bed.st.Namespaces.With("default", &model.Namespace{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}})
	pod := func(name string, n int, labels map[string]string) *netnstest.Pod {
		ips := []netip.Addr{netip.AddrFrom4([4]byte{10, 244, 1, byte(n)}), netip.MustParseAddr("fd00:1::" + strconv.Itoa(n))}
		p := node.AddPod(name, ips...)
		bed.st.Pods = bed.st.Pods.With(model.PodKey{Namespace: "default", Name: name}, &model.Pod{Namespace: "default", Name: name, Node: "node-a", IPs: ips, Labels: labels})
		return p
	}
	bed.client = pod("client", 2, map[string]string{"role": "client"})
	for i, name := range []string{"b1", "b2", "b3"} {
		p := pod(name, 11+i, map[string]string{"app": "web"})
		serveIdentity(t, p.NS, name, svcPort)
		bed.backends[name] = p
	}
	bed.outside = node.AddPod("outside", modeltest.Addrs("192.168.50.2", "fd00:50::2")...)
	for _, a := range bed.nodeIPs {
		addToLoopback(t, node.NS, netip.PrefixFrom(a, a.BitLen()).String())
	}
	// The outside namespace is the node's upstream router too, as a real
	// node has a default route: without one, a service address that is
	// not translated would be unreachable before any filter sees it.
	routeVia(t, node.NS, "192.168.50.2", "0.0.0.0/0")
	routeVia(t, node.NS, "fd00:50::2", "::/0")
	var parts []func(*ruleset.Table) Part
	if firewall {
		parts = append(parts, func(tbl *ruleset.Table) Part {
			f, err := NewFirewall(tbl, FirewallConfig{NodeName: "node-a", NetNSFd: int(node.NS)})
			if err != nil {
				t.Fatal(err)
			}
			return f
		})
	}
	parts = append(parts, func(tbl *ruleset.Table) Part {
		p, err := NewServiceProxy(tbl, ServiceProxyConfig{NodeName: "node-a", NetNSFd: int(node.NS)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
	bed.b = newBackendIn(t, node.NS, parts...)
	syncOK(t, bed.b, bed.st.State, &model.Changes{Full: true})
	return bed
}

// endpointsOf returns ready endpoints on node-a for the named backends, of
// both families.
func (bed *svcBed) endpointsOf(names ...string) model.Endpoints {
	var eps model.Endpoints
	for _, n := range names {
		for _, ip := range bed.backends[n].IPs {
			eps = append(eps, model.Endpoint{Addr: ip, Port: svcPort, Node: "node-a",
				EndpointConditions: model.EndpointConditions{Ready: true, Serving: true}})
		}
	}
	// The model keeps endpoints sorted.
	slices.SortFunc(eps, func(a, b model.Endpoint) int { return a.Addr.Compare(b.Addr) })
	return eps
}

// setService puts a service port and its endpoints and syncs; it returns
// the sync's statistics.
func (bed *svcBed) setService(t *testing.T, sp *model.ServicePort, eps model.Endpoints) Stats {
	t.Helper()
	next := bed.st.Clone()
	next.ServicePorts = bed.st.ServicePorts
	next.Endpoints = bed.st.Endpoints
	next.ServicePorts = next.ServicePorts.With(sp.Key, sp)
	if len(eps) == 0 {
		next.Endpoints = next.Endpoints.Without(sp.Key)
	} else {
		next.Endpoints = next.Endpoints.With(sp.Key, eps)
	}
	ch := &model.Changes{}
	ch.ServicePorts.Add(sp.Key)
	ch.Endpoints.Add(sp.Key)
	bed.st = next
	return syncOK(t, bed.b, bed.st.State, ch)
}

// serveIdentity makes ns answer TCP connections and UDP datagrams on port
// (both families) with "<name> <source address it sees>".
func serveIdentity(t testing.TB, ns netns.NsHandle, name string, port int) {
	t.Helper()
	answer := func(from net.Addr) []byte {
		ap := netip.MustParseAddrPort(from.String())
		return []byte(name + " " + ap.Addr().Unmap().String())
	}
	err := kerneltest.Do(ns, func() error {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write(answer(c.RemoteAddr()))
				c.Close()
			}
		}()
		u, err := net.ListenPacket("udp", ":"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		t.Cleanup(func() { u.Close() })
		go func() {
			buf := make([]byte, 64)
			for {
				_, from, err := u.ReadFrom(buf)
				if err != nil {
					return
				}
				u.WriteTo(answer(from), from)
			}
		}()
		return nil
	})
	if err != nil {
		t.Fatalf("%s: serve identity on %d: %v", name, port, err)
	}
}

// ask connects from ns to dst and returns who answered (serveIdentity's
// name) and the source address it saw.
func ask(ns netns.NsHandle, protocol string, dst netip.AddrPort, timeout time.Duration) (name string, seen netip.Addr, err error) {
	err = kerneltest.Do(ns, func() error {
		c, err := net.DialTimeout(protocol, dst.String(), timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(timeout))
		var b []byte
		if protocol == "udp" {
			buf := make([]byte, 64)
			if _, err := c.Write([]byte("?")); err != nil {
				return err
			}
			n, err := c.Read(buf)
			if err != nil {
				return err
			}
			b = buf[:n]
		} else if b, err = io.ReadAll(c); err != nil {
			return err
		}
		n, a, ok := strings.Cut(string(b), " ")
		if !ok {
			return errors.New("malformed answer " + string(b))
		}
		name = n
		seen, err = netip.ParseAddr(a)
		return err
	})
	return name, seen, err
}

// mustAsk is ask that fails the test on an error.
func mustAsk(t *testing.T, p *netnstest.Pod, protocol string, dst netip.AddrPort) (string, netip.Addr) {
	t.Helper()
	name, seen, err := ask(p.NS, protocol, dst, netnstest.AllowedTimeout)
	if err != nil {
		t.Fatalf("%s -> %s %s: %v", p.Name, protocol, dst, err)
	}
	return name, seen
}

// answers asks n times and counts who answered.
func answers(t *testing.T, p *netnstest.Pod, protocol string, dst netip.AddrPort, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		name, _ := mustAsk(t, p, protocol, dst)
		got[name]++
	}
	return got
}

func webPort(name string, vips ...netip.Addr) *model.ServicePort {
	return &model.ServicePort{Key: model.ServicePortKey{Namespace: "default", Name: name, Protocol: model.TCP},
		ClusterIPs: vips, Port: 80}
}

var (
	vip4 = netip.MustParseAddr("10.96.0.10")
	vip6 = netip.MustParseAddr("fd00:96::10")
)

// TestKernelServiceProxyTraffic sends real connections through services.
func TestKernelServiceProxyTraffic(t *testing.T) {
	bed := newSvcBed(t, false)
	web := webPort("web", vip4, vip6)
	web.NodePort = 30080
	bed.setService(t, web, bed.endpointsOf("b1", "b2", "b3"))
	client4, client6 := bed.client.IPs[0], bed.client.IPs[1]

	t.Run("cluster IP from a pod spreads over every endpoint, without masquerade", func(t *testing.T) {
		for _, vip := range []netip.Addr{vip4, vip6} {
			got := answers(t, bed.client, "tcp", netip.AddrPortFrom(vip, 80), 60)
			for _, b := range []string{"b1", "b2", "b3"} {
				if got[b] == 0 {
					t.Errorf("%s: 60 connections never reached %s: %v", vip, b, got)
				}
			}
			_, seen := mustAsk(t, bed.client, "tcp", netip.AddrPortFrom(vip, 80))
			if want := map[bool]netip.Addr{false: client4, true: client6}[vip.Is6()]; seen != want {
				t.Errorf("%s: backend saw source %s, want the pod's own %s", vip, seen, want)
			}
		}
	})
	t.Run("UDP", func(t *testing.T) {
		udp := webPort("dns", vip4)
		udp.Key.Protocol, udp.Port = model.UDP, 53
		bed.setService(t, udp, bed.endpointsOf("b2"))
		if name, _ := mustAsk(t, bed.client, "udp", netip.AddrPortFrom(vip4, 53)); name != "b2" {
			t.Errorf("UDP service answered by %s, want b2", name)
		}
	})
	t.Run("NodePort from outside the node, masqueraded", func(t *testing.T) {
		for _, nip := range bed.nodeIPs {
			name, seen := mustAsk(t, bed.outside, "tcp", netip.AddrPortFrom(nip, 30080))
			if !strings.HasPrefix(name, "b") {
				t.Errorf("%s:30080 answered by %q", nip, name)
			}
			if seen == bed.outside.IPs[0] || seen == bed.outside.IPs[1] {
				t.Errorf("%s:30080: backend saw the outside client's own address %s; want it masqueraded", nip, seen)
			}
		}
	})
	t.Run("a removed endpoint gets no new connection, and the change is elements only", func(t *testing.T) {
		s := bed.setService(t, web, bed.endpointsOf("b2", "b3"))
		for typ := range s.ByType {
			if typ != "newsetelem" && typ != "delsetelem" {
				t.Errorf("endpoint change sent %v; want set element messages only", s.ByType)
			}
		}
		got := answers(t, bed.client, "tcp", netip.AddrPortFrom(vip4, 80), 40)
		if got["b1"] > 0 || got["b2"] == 0 || got["b3"] == 0 {
			t.Errorf("after removing b1: %v", got)
		}
		bed.setService(t, web, bed.endpointsOf("b1", "b2", "b3"))
	})
	t.Run("a service without endpoints is refused", func(t *testing.T) {
		empty := webPort("empty", netip.MustParseAddr("10.96.0.99"), netip.MustParseAddr("fd00:96::99"))
		bed.setService(t, empty, nil)
		for _, vip := range empty.ClusterIPs {
			// Refused, not timed out: a port-unreachable came back. (Over
			// IPv6 the client acts only on the one answering the
			// retransmitted SYN, about 1 s later; IPv4 on the first.)
			start := time.Now()
			_, _, err := ask(bed.client.NS, "tcp", netip.AddrPortFrom(vip, 80), netnstest.AllowedTimeout)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s: %v, want connection refused", vip, err)
			}
			t.Logf("%s: refused after %s", vip, time.Since(start).Round(time.Millisecond))
		}
	})
	t.Run("session affinity sticks", func(t *testing.T) {
		sticky := webPort("sticky", netip.MustParseAddr("10.96.0.20"), netip.MustParseAddr("fd00:96::20"))
		sticky.AffinityTimeout = 600
		bed.setService(t, sticky, bed.endpointsOf("b1", "b2", "b3"))
		for _, vip := range sticky.ClusterIPs {
			if got := answers(t, bed.client, "tcp", netip.AddrPortFrom(vip, 80), 30); len(got) != 1 {
				t.Errorf("%s: a client with affinity reached %v, want one backend", vip, got)
			}
		}
		// The endpoint it sticks to goes: the client must pick another.
		first, _ := mustAsk(t, bed.client, "tcp", netip.AddrPortFrom(sticky.ClusterIPs[0], 80))
		var rest []string
		for _, b := range []string{"b1", "b2", "b3"} {
			if b != first {
				rest = append(rest, b)
			}
		}
		bed.setService(t, sticky, bed.endpointsOf(rest...))
		got := answers(t, bed.client, "tcp", netip.AddrPortFrom(sticky.ClusterIPs[0], 80), 20)
		if got[first] > 0 || len(got) != 1 {
			t.Errorf("after %s went: %v, want one of %v", first, got, rest)
		}
	})
	t.Run("hairpin: a pod reaches itself through a service", func(t *testing.T) {
		self := webPort("self", netip.MustParseAddr("10.96.0.30"), netip.MustParseAddr("fd00:96::30"))
		bed.setService(t, self, bed.endpointsOf("b1"))
		for _, vip := range self.ClusterIPs {
			name, seen := mustAsk(t, bed.backends["b1"], "tcp", netip.AddrPortFrom(vip, 80))
			if name != "b1" || seen == bed.backends["b1"].IPs[0] || seen == bed.backends["b1"].IPs[1] {
				t.Errorf("%s: answered by %s seeing %s; want b1 seeing the node", vip, name, seen)
			}
		}
	})
}

// TestKernelServiceProxyUnderFirewall checks that policies apply to
// connections through a service: the firewall sees the translated
// destination.
func TestKernelServiceProxyUnderFirewall(t *testing.T) {
	bed := newSvcBed(t, true)
	bed.setService(t, webPort("web", vip4, vip6), bed.endpointsOf("b1", "b2", "b3"))
	setPolicy := func(from string) {
		next := bed.st.Clone()
		err := next.Apply([]byte(`
kind: NetworkPolicy
apiVersion: networking.k8s.io/v1
metadata: {name: web, namespace: default}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{podSelector: {matchLabels: {role: ` + from + `}}}]
`))
		if err != nil {
			t.Fatal(err)
		}
		ch := &model.Changes{}
		ch.Policies.Add(model.PolicyKey{Namespace: "default", Name: "web"})
		bed.st = next
		syncOK(t, bed.b, bed.st.State, ch)
	}
	setPolicy("nobody")
	for _, vip := range []netip.Addr{vip4, vip6} {
		if _, _, err := ask(bed.client.NS, "tcp", netip.AddrPortFrom(vip, 80), netnstest.ProbeTimeout); err == nil {
			t.Errorf("%s: connected through the service although a policy denies the client", vip)
		}
	}
	setPolicy("client")
	for _, vip := range []netip.Addr{vip4, vip6} {
		if name, _ := mustAsk(t, bed.client, "tcp", netip.AddrPortFrom(vip, 80)); !strings.HasPrefix(name, "b") {
			t.Errorf("%s: answered by %q", vip, name)
		}
	}
}
