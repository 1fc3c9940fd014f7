package nft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Packet flows of the service proxy, as kube-proxy's nftables mode defines
// them (its proxier tests state, per service shape, which client reaching
// which address gets which endpoints, masqueraded or not, rejected or
// dropped). Each row is proven with a real connection through three nodes,
// each running its own service proxy, and a router that is also the client
// outside the cluster:
//
//	outside (router) ── 192.168.61.0/24 ── node-a  pods client-a 10.244.1.2
//	                 ── 192.168.62.0/24 ── node-b  pods b1 10.244.2.11
//	                 ── 192.168.63.0/24 ── node-c  pods c1 10.244.3.11
//
// The router routes each pod CIDR to its node and the load-balancer and
// external IPs to the node named in the row's layout; nodes route everything
// else to the router. IPv4 only: the IPv6 paths are the same rules with
// ip6 (the single-node tests cover both families).

// flowOutcome is what a connection gets.
type flowOutcome int

const (
	answered flowOutcome = iota // an endpoint answers
	refused                     // rejected: ICMP port unreachable, the client sees ECONNREFUSED
	dropped                     // dropped: no answer at all
)

// flowRow is one fact: a client reaching an address gets one of the
// endpoints (by pod name) seeing the named source, or is refused or dropped.
type flowRow struct {
	name      string
	from      string // client-a, node-a, node-b, outside
	to        string // an address name of flowBed.addrs and a port
	port      uint16
	outcome   flowOutcome
	endpoints []string // for answered: any of these
	// seen is whose address the endpoint sees: "client" for the client's
	// own, or a node name for that node's (masqueraded there).
	seen string
	// ipvsWhy, when set, says why the IPVS proxy cannot do what the row
	// says; it does ipvsOutcome instead.
	ipvsWhy     string
	ipvsOutcome flowOutcome
}

// Where the IPVS proxy differs: one virtual service per address has one
// destination list whatever the client, and the kernel answers for it.
const (
	ipvsNoShortCircuit = "IPVS has one destination list per virtual service whatever the client: no in-cluster short-circuit to endpoints elsewhere, and the empty local list is refused"
	ipvsNoDestination  = "an IPVS virtual service without destinations is refused by the node's stack, not dropped"
	ipvsUnknownPort    = "the IPVS NAT part drops traffic to a virtual address on a port no service has (ipvs-input), it does not reject it"
)

// The service shapes of the table:
//
//	web    ClusterIP 10.96.0.10:80, NodePort 30080, LB IP 192.0.2.10 (routed
//	       to node-b), external IP 192.0.2.20 (routed to node-c);
//	       externalTrafficPolicy Cluster; one endpoint, c1 on node-c.
//	local  ClusterIP 10.96.0.11:80, NodePort 30081, LB IP 192.0.2.11
//	       (routed to node-b); externalTrafficPolicy Local; one endpoint,
//	       b1 on node-b.
//	empty  ClusterIP 10.96.0.12:80, NodePort 30082; no endpoints.
//	fenced ClusterIP 10.96.0.13:80, LB IP 192.0.2.13 (routed to node-b),
//	       loadBalancerSourceRanges 192.168.62.0/24 (the router's side of
//	       node-b's link); one endpoint, b1 on node-b.
var flowRows = []flowRow{
	// Cluster IPs: pods keep their address; the node's own connections
	// are masqueraded (they come from outside the cluster CIDRs).
	{name: "pod to cluster IP, endpoint on another node", from: "client-a", to: "web-cluster-ip", port: 80,
		endpoints: []string{"c1"}, seen: "client"},
	{name: "node to cluster IP", from: "node-a", to: "web-cluster-ip", port: 80,
		endpoints: []string{"c1"}, seen: "node-a"},
	// externalTrafficPolicy Cluster: every connection to an external
	// address is masqueraded on the node that translates it, whoever the
	// client, so that the reply comes back through that node.
	{name: "outside to NodePort of node-b, endpoint on node-c", from: "outside", to: "node-b", port: 30080,
		endpoints: []string{"c1"}, seen: "node-b"},
	{name: "pod on node-a to NodePort of node-b, endpoint on node-c", from: "client-a", to: "node-b", port: 30080,
		endpoints: []string{"c1"}, seen: "node-b"},
	{name: "node-a to NodePort of node-b, endpoint on node-c", from: "node-a", to: "node-b", port: 30080,
		endpoints: []string{"c1"}, seen: "node-b"},
	{name: "outside to LB IP (at node-b), endpoint on node-c", from: "outside", to: "web-lb", port: 80,
		endpoints: []string{"c1"}, seen: "node-b"},
	{name: "pod to LB IP: translated on its own node, masqueraded there", from: "client-a", to: "web-lb", port: 80,
		endpoints: []string{"c1"}, seen: "node-a"},
	{name: "outside to external IP (at node-c), local endpoint: still masqueraded", from: "outside", to: "web-external", port: 80,
		endpoints: []string{"c1"}, seen: "node-c"},
	// externalTrafficPolicy Local: the client's address reaches the pod.
	{name: "outside to NodePort of policy Local, local endpoint", from: "outside", to: "node-b", port: 30081,
		endpoints: []string{"b1"}, seen: "client"},
	{name: "outside to LB IP of policy Local (at node-b), local endpoint", from: "outside", to: "local-lb", port: 80,
		endpoints: []string{"b1"}, seen: "client"},
	{name: "outside to NodePort of policy Local on a node without a local endpoint", from: "outside", to: "node-c", port: 30081,
		outcome: dropped, ipvsWhy: ipvsNoDestination, ipvsOutcome: refused},
	// externalTrafficPolicy Local, clients inside the cluster: their
	// connection is translated on their own node, which sends it to any
	// endpoint; pods keep their address, the node's own are masqueraded.
	{name: "pod to its own node's NodePort of policy Local, endpoint elsewhere", from: "client-a", to: "node-a", port: 30081,
		endpoints: []string{"b1"}, seen: "client", ipvsWhy: ipvsNoShortCircuit, ipvsOutcome: refused},
	{name: "pod to LB IP of policy Local, endpoint elsewhere", from: "client-a", to: "local-lb", port: 80,
		endpoints: []string{"b1"}, seen: "client"},
	{name: "node to LB IP of policy Local, endpoint elsewhere", from: "node-a", to: "local-lb", port: 80,
		endpoints: []string{"b1"}, seen: "node-a"},
	{name: "node to its own NodePort of policy Local, endpoint elsewhere", from: "node-a", to: "node-a", port: 30081,
		endpoints: []string{"b1"}, seen: "node-a", ipvsWhy: ipvsNoShortCircuit, ipvsOutcome: refused},
	// No endpoints at all: rejected, at every address.
	{name: "pod to cluster IP without endpoints", from: "client-a", to: "empty-cluster-ip", port: 80, outcome: refused},
	{name: "outside to NodePort without endpoints", from: "outside", to: "node-b", port: 30082, outcome: refused},
	{name: "node to NodePort without endpoints", from: "node-a", to: "node-b", port: 30082, outcome: refused},
	// The service CIDR (10.96.0.0/16, --service-cluster-ip-range): a cluster
	// IP on a port no service has is rejected, an address no service has
	// is dropped; neither leaves by the default route.
	{name: "pod to a cluster IP on a port no service has", from: "client-a", to: "web-cluster-ip", port: 81, outcome: refused,
		ipvsWhy: ipvsUnknownPort, ipvsOutcome: dropped},
	{name: "node to a cluster IP on a port no service has", from: "node-a", to: "web-cluster-ip", port: 81, outcome: refused,
		ipvsWhy: ipvsUnknownPort, ipvsOutcome: dropped},
	{name: "pod to an unallocated address of the service CIDR", from: "client-a", to: "unallocated", port: 80, outcome: dropped},
	{name: "node to an unallocated address of the service CIDR", from: "node-a", to: "unallocated", port: 80, outcome: dropped},
	// loadBalancerSourceRanges: only clients in the ranges reach the LB IP,
	// whichever node translates; the cluster IP is not restricted.
	{name: "client in the source ranges to restricted LB IP", from: "outside", to: "fenced-lb", port: 80,
		endpoints: []string{"b1"}, seen: "node-b"},
	{name: "pod outside the source ranges to restricted LB IP", from: "client-a", to: "fenced-lb", port: 80, outcome: dropped},
	{name: "node outside the source ranges to restricted LB IP", from: "node-a", to: "fenced-lb", port: 80, outcome: dropped},
	{name: "pod to the cluster IP of a service with source ranges", from: "client-a", to: "fenced-cluster-ip", port: 80,
		endpoints: []string{"b1"}, seen: "client"},
}

// flowBed is the three-node layout.
type flowBed struct {
	st      *model.State
	nodes   map[string]*netnstest.Node
	backend map[string]*Backend
	clients map[string]netns.NsHandle
	own     map[string][]netip.Addr // each client's own addresses
	addrs   map[string]netip.Addr
}

func newFlowBed(t *testing.T, mode string) *flowBed {
	bed := &flowBed{nodes: map[string]*netnstest.Node{}, backend: map[string]*Backend{},
		clients: map[string]netns.NsHandle{}, own: map[string][]netip.Addr{},
		addrs: map[string]netip.Addr{
			"web-cluster-ip": netip.MustParseAddr("10.96.0.10"), "web-lb": netip.MustParseAddr("192.0.2.10"),
			"web-external": netip.MustParseAddr("192.0.2.20"), "local-cluster-ip": netip.MustParseAddr("10.96.0.11"),
			"local-lb": netip.MustParseAddr("192.0.2.11"), "empty-cluster-ip": netip.MustParseAddr("10.96.0.12"),
			"unallocated":       netip.MustParseAddr("10.96.0.200"),
			"fenced-cluster-ip": netip.MustParseAddr("10.96.0.13"), "fenced-lb": netip.MustParseAddr("192.0.2.13"),
		}}
	router := netnstest.NewNode(t)
	bed.clients["outside"] = router.NS
	bed.st = modeltest.NewState(nil, nil, nil)
	for i, name := range []string{"node-a", "node-b", "node-c"} {
		n := netnstest.NewNode(t)
		bed.nodes[name] = n
		bed.clients[name] = n.NS
		nodeIP := fmt.Sprintf("192.168.%d.2", 61+i)
		routerIP := fmt.Sprintf("192.168.%d.1", 61+i)
		podCIDR := fmt.Sprintf("10.244.%d.0/24", 1+i)
		wire(t, router.NS, n.NS, "to-"+name, "uplink", []string{routerIP + "/24"}, []string{nodeIP + "/24"})
		routeVia(t, n.NS, routerIP, "0.0.0.0/0")
		routeVia(t, router.NS, nodeIP, podCIDR)
		bed.addrs[name] = netip.MustParseAddr(nodeIP)
		// A node masquerades to the address of the interface the packet
		// leaves by: its uplink's, or the pods' gateway toward a local pod.
		bed.own[name] = []netip.Addr{netip.MustParseAddr(nodeIP), netnstest.Gateway4}
		bed.own["outside"] = append(bed.own["outside"], netip.MustParseAddr(routerIP))
		bed.st.Nodes = bed.st.Nodes.With(name, &model.Node{Name: name, InternalIPs: []netip.Addr{netip.MustParseAddr(nodeIP)},
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix(podCIDR)}})
	}
	routeVia(t, router.NS, "192.168.62.2", "192.0.2.10/32", "192.0.2.11/32", "192.0.2.13/32")
	routeVia(t, router.NS, "192.168.63.2", "192.0.2.20/32")

	pod := func(node, name, ip string) *netnstest.Pod {
		return bed.nodes[node].AddPod(name, netip.MustParseAddr(ip))
	}
	ca := pod("node-a", "client-a", "10.244.1.2")
	bed.clients["client-a"], bed.own["client-a"] = ca.NS, ca.IPs
	for _, b := range []struct{ node, name, ip string }{{"node-b", "b1", "10.244.2.11"}, {"node-c", "c1", "10.244.3.11"}} {
		serveIdentity(t, pod(b.node, b.name, b.ip).NS, b.name, svcPort)
	}

	ep := func(ip, node string) model.Endpoints {
		return model.Endpoints{{Addr: netip.MustParseAddr(ip), Port: svcPort, Node: node,
			EndpointConditions: model.EndpointConditions{Ready: true, Serving: true}}}
	}
	web := webPort("web", bed.addrs["web-cluster-ip"])
	web.NodePort, web.LoadBalancerIPs, web.ExternalIPs = 30080, []netip.Addr{bed.addrs["web-lb"]}, []netip.Addr{bed.addrs["web-external"]}
	local := webPort("local", bed.addrs["local-cluster-ip"])
	local.NodePort, local.LoadBalancerIPs, local.ExternalTrafficLocal = 30081, []netip.Addr{bed.addrs["local-lb"]}, true
	empty := webPort("empty", bed.addrs["empty-cluster-ip"])
	empty.NodePort = 30082
	fenced := webPort("fenced", bed.addrs["fenced-cluster-ip"])
	fenced.LoadBalancerIPs = []netip.Addr{bed.addrs["fenced-lb"]}
	fenced.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("192.168.62.0/24")}
	for _, sp := range []*model.ServicePort{web, local, empty, fenced} {
		bed.st.ServicePorts = bed.st.ServicePorts.With(sp.Key, sp)
	}
	bed.st.Endpoints = bed.st.Endpoints.With(fenced.Key, ep("10.244.2.11", "node-b"))
	bed.st.Endpoints = bed.st.Endpoints.With(web.Key, ep("10.244.3.11", "node-c"))
	bed.st.Endpoints = bed.st.Endpoints.With(local.Key, ep("10.244.2.11", "node-b"))

	serviceCIDRs := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}
	for name, n := range bed.nodes {
		part := func(tbl *ruleset.Table) Part {
			p, err := NewServiceProxy(tbl, ServiceProxyConfig{NodeName: name, NetNSFd: int(n.NS), ServiceCIDRs: serviceCIDRs})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		if mode == "ipvs" {
			proxy := newIPVSProxyIn(t, n, name)
			if err := proxy.Sync(context.Background(), bed.st, &model.Changes{Full: true}); err != nil {
				t.Fatalf("%s: IPVS sync: %v", name, err)
			}
			part = func(tbl *ruleset.Table) Part {
				return ipvs.NewNAT(tbl, ipvs.NATConfig{PlanConfig: ipvs.PlanConfig{NodeName: name}, ServiceCIDRs: serviceCIDRs})
			}
		}
		bed.backend[name] = newBackendIn(t, n.NS, part)
		syncOK(t, bed.backend[name], bed.st, &model.Changes{Full: true})
	}
	return bed
}

// check makes the row's connection and reports how it differs from the row.
func (bed *flowBed) check(t *testing.T, r flowRow) {
	t.Helper()
	dst, ok := bed.addrs[r.to]
	if !ok {
		t.Fatalf("row %q: unknown address %q", r.name, r.to)
	}
	timeout := netnstest.AllowedTimeout
	if r.outcome == dropped {
		timeout = netnstest.ProbeTimeout
	}
	name, seen, err := ask(bed.clients[r.from], "tcp", netip.AddrPortFrom(dst, r.port), timeout)
	switch r.outcome {
	case refused:
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("%s -> %s:%d: got (%q, %v), want refused", r.from, r.to, r.port, name, err)
		}
	case dropped:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("%s -> %s:%d: got (%q, %v), want dropped (no answer)", r.from, r.to, r.port, name, err)
		}
	case answered:
		if err != nil {
			t.Errorf("%s -> %s:%d: %v, want an answer from %v", r.from, r.to, r.port, err, r.endpoints)
			return
		}
		want := bed.own[r.seen]
		if r.seen == "client" {
			want = bed.own[r.from]
		}
		if !slices.Contains(r.endpoints, name) || !slices.Contains(want, seen) {
			t.Errorf("%s -> %s:%d: answered by %s seeing %s; want one of %v seeing %s (%s)",
				r.from, r.to, r.port, name, seen, r.endpoints, want, r.seen)
		}
	}
}

// TestKernelServiceFlows proves every row of flowRows with a real TCP
// connection, with the nftables service proxy.
func TestKernelServiceFlows(t *testing.T) {
	bed := newFlowBed(t, "nftables")
	for _, r := range flowRows {
		t.Run(r.name, func(t *testing.T) { bed.check(t, r) })
	}
}

// TestKernelServiceFlowsIPVS proves the same rows with the IPVS proxy and
// its nftables NAT part, where a row's ipvsOutcome says what IPVS does
// instead (and ipvsWhy why). It needs IPVS, so it runs in the VM tier.
func TestKernelServiceFlowsIPVS(t *testing.T) {
	bed := newFlowBed(t, "ipvs")
	for _, r := range flowRows {
		t.Run(r.name, func(t *testing.T) {
			if r.ipvsWhy != "" {
				t.Logf("IPVS differs: %s", r.ipvsWhy)
				r.outcome = r.ipvsOutcome
			}
			bed.check(t, r)
		})
	}
}
