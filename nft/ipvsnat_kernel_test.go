package nft

import (
	"net/netip"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// ipvsStandIn DNATs what IPVS would in these tests, for hosts without IPVS:
// connections to the two cluster IPs' port 80 go to the backend pod, from
// outside the node and from the node itself. It is a table of the test's
// own, at a priority after ours (-100), since IPVS too sees the packet after
// our mark chain.
const ipvsStandIn = `table ip ipvs-stand-in {
	chain prerouting {
		type nat hook prerouting priority dstnat + 1; policy accept;
		ip daddr { 10.96.0.10, 10.96.0.11 } tcp dport 80 dnat to 10.244.0.3:8080
	}

	chain output {
		type nat hook output priority -99; policy accept;
		ip daddr { 10.96.0.10, 10.96.0.11 } tcp dport 80 dnat to 10.244.0.3:8080
	}
}
`

// natCluster is one node namespace with the IPVS NAT part's test layout: a
// client pod and a backend pod on the node, a host outside the cluster
// beyond it, and the cluster IP 10.96.0.10 on the node's loopback (where
// kube-dummy-if would hold it), serving ports 81 and 82 itself.
type natCluster struct {
	node            *netnstest.Node
	client, backend *netnstest.Pod
	outside         netns.NsHandle
	state           *model.State
}

func newNATCluster(t *testing.T) *natCluster {
	node := netnstest.NewNode(t)
	c := &natCluster{node: node,
		client:  node.AddPod("client", netip.MustParseAddr("10.244.0.2")),
		backend: node.AddPod("backend", netip.MustParseAddr("10.244.0.3")),
		outside: kerneltest.NewNetNS(t)}
	wire(t, node.NS, c.outside, "uplink", "eth0", []string{"198.51.100.1/24"}, []string{"198.51.100.2/24"})
	routeVia(t, c.outside, "198.51.100.1", "10.96.0.0/12", "10.244.0.0/16")
	addToLoopback(t, node.NS, "10.96.0.10/32")
	serveIdentity(t, c.backend.NS, c.backend.Name, 8080)
	serveIdentity(t, node.NS, "node", 81)
	serveIdentity(t, node.NS, "node", 82)
	nftIn(t, node.NS, ipvsStandIn, "-f", "-")

	web := &model.ServicePort{Key: model.ServicePortKey{Namespace: "default", Name: "web", Port: "http", Protocol: model.TCP},
		ClusterIPs: modeltest.Addrs("10.96.0.10", "fd00:96::10"), Port: 80}
	alt := *web
	alt.Key.Port, alt.Port = "alt", 82
	pin := &model.ServicePort{Key: model.ServicePortKey{Namespace: "default", Name: "pin", Protocol: model.TCP},
		ClusterIPs: modeltest.Addrs("10.96.0.11"), Port: 80, Options: model.ProxyOptions{Hairpin: true}}
	backend := model.Endpoints{{Addr: netip.MustParseAddr("10.244.0.3"), Port: 8080, Node: "node-a",
		EndpointConditions: model.EndpointConditions{Ready: true, Serving: true}}}
	c.state = &model.State{
		ServicePorts: model.MapOf(map[model.ServicePortKey]*model.ServicePort{web.Key: web, alt.Key: &alt, pin.Key: pin}),
		Endpoints:    model.MapOf(map[model.ServicePortKey]model.Endpoints{web.Key: backend, pin.Key: backend}),
		Nodes: model.MapOf(map[string]*model.Node{"node-a": {Name: "node-a", InternalIPs: modeltest.Addrs("198.51.100.1"),
			PodCIDRs: prefixesOf("10.244.0.0/24")}}),
	}
	return c
}

// program programs the NAT part with cfg into the node, in a backend of its
// own (a new backend repairs what an earlier one left), and checks the
// kernel round trip.
func (c *natCluster) program(t *testing.T, cfg ipvs.NATConfig) {
	t.Helper()
	cfg.NodeName = "node-a"
	mk := func(tbl *ruleset.Table) []Part { return []Part{ipvs.NewNAT(tbl, cfg)} }
	b := newBackendIn(t, c.node.NS, func(tbl *ruleset.Table) Part { return mk(tbl)[0] })
	syncOK(t, b, c.state, &model.Changes{Full: true})
	requireRoundTrip(t, c.node.NS, b, c.state, mk)
}

var (
	clusterIP   = netip.MustParseAddr("10.96.0.10")
	nodeUplink  = netip.MustParseAddr("198.51.100.1")
	outsideHost = netip.MustParseAddr("198.51.100.2")
	podGateway  = netnstest.Gateway4 // the node's address on every pod veth
)

// TestKernelIPVSNATMasquerade checks the masquerade mark with a stand-in
// for IPVS: a connection to a service from outside the cluster CIDRs
// reaches the backend from the node's address, one from a pod keeps the
// pod's address, one from the node itself (whose source is the cluster IP)
// is masqueraded, with --masquerade-all a pod's too, and --cluster-cidr
// decides what counts as the cluster.
func TestKernelIPVSNATMasquerade(t *testing.T) {
	c := newNATCluster(t)
	client := c.client.IPs[0]
	wantSource(t, "not programmed: outside to cluster IP", c.outside, clusterIP, 80, outsideHost)
	wantSource(t, "not programmed: node to cluster IP", c.node.NS, clusterIP, 80, clusterIP)

	c.program(t, ipvs.NATConfig{})
	wantSource(t, "outside to cluster IP", c.outside, clusterIP, 80, podGateway)
	wantSource(t, "pod to cluster IP", c.client.NS, clusterIP, 80, client)
	wantSource(t, "node to cluster IP", c.node.NS, clusterIP, 80, podGateway)

	c.program(t, ipvs.NATConfig{MasqueradeAll: true})
	wantSource(t, "--masquerade-all: outside to cluster IP", c.outside, clusterIP, 80, podGateway)
	wantSource(t, "--masquerade-all: pod to cluster IP", c.client.NS, clusterIP, 80, podGateway)

	c.program(t, ipvs.NATConfig{ClusterCIDRs: prefixesOf("10.244.0.0/16", "198.51.100.0/24")})
	wantSource(t, "--cluster-cidr covering the outside host: outside to cluster IP", c.outside, clusterIP, 80, outsideHost)
}

// TestKernelIPVSNATDropsOtherPorts checks the input rules with real
// traffic to a cluster IP held by the node: a port that is no service's is
// dropped, a service port is not, pings are answered, and the node's own
// address is not affected.
func TestKernelIPVSNATDropsOtherPorts(t *testing.T) {
	c := newNATCluster(t)
	reachable := func(stage string, dst netip.Addr, port int, want bool) {
		t.Helper()
		timeout := netnstest.AllowedTimeout
		if !want {
			timeout = netnstest.ProbeTimeout
		}
		_, _, err := ask(c.client.NS, "tcp", netip.AddrPortFrom(dst, uint16(port)), timeout)
		if got := err == nil; got != want {
			t.Errorf("%s: connection to %s port %d: connected=%v (%v), want %v", stage, dst, port, got, err, want)
		}
	}
	reachable("not programmed", clusterIP, 81, true)

	c.program(t, ipvs.NATConfig{})
	reachable("programmed, no service on the port", clusterIP, 81, false)
	reachable("programmed, service port", clusterIP, 82, true)
	reachable("programmed, node address", nodeUplink, 81, true)
	if !pingOK(t, c.client.NS, clusterIP, netnstest.AllowedTimeout) {
		t.Errorf("ping to cluster IP %s got no answer", clusterIP)
	}
}

// TestKernelIPVSNATHairpin checks hairpin with the stand-in for IPVS: a
// backend pod reaching itself through a service gets no connection at all
// while no service asks for hairpin, gets it from the node's address once a
// service of the pod has the hairpin annotation, and with --hairpin-mode
// without any annotation.
func TestKernelIPVSNATHairpin(t *testing.T) {
	c := newNATCluster(t)
	pinIP := netip.MustParseAddr("10.96.0.11")
	connects := func(stage string, dst netip.Addr, want bool) {
		t.Helper()
		if want {
			wantSource(t, stage, c.backend.NS, dst, 80, podGateway)
			return
		}
		if _, seen, err := ask(c.backend.NS, "tcp", netip.AddrPortFrom(dst, 80), netnstest.ProbeTimeout); err == nil {
			t.Errorf("%s: connection to %s succeeded (source seen %s), want none", stage, dst, seen)
		}
	}
	annotated := c.state
	plain := *annotated
	plain.ServicePorts = model.Map[model.ServicePortKey, *model.ServicePort]{}
	for k, sp := range annotated.ServicePorts.All() {
		cp := *sp
		cp.Options.Hairpin = false
		plain.ServicePorts = plain.ServicePorts.With(k, &cp)
	}

	c.state = &plain
	c.program(t, ipvs.NATConfig{})
	connects("no hairpin service: backend to itself", pinIP, false)

	c.state = annotated
	c.program(t, ipvs.NATConfig{})
	connects("hairpin annotation: backend to itself", pinIP, true)

	c.state = &plain
	c.program(t, ipvs.NATConfig{HairpinAll: true})
	connects("--hairpin-mode, no annotation: backend to itself", clusterIP, true)
}
