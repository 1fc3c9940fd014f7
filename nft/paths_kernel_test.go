package nft

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// pathsBed is two nodes, each running the firewall and a service proxy, and
// a host outside the cluster, for the firewall's packet-path truth table:
//
//	outside 192.168.50.2 ── node-a ── peer link 192.168.60.1 | .2 ── node-b
//	                        client  x/client 10.244.1.2      client-b x/client-b 10.244.2.2
//	                        web-a   y/web-a  10.244.1.11     web-b    y/web-b    10.244.2.11
//
// (and the same in IPv6). web-a and web-b answer TCP and UDP on 8080 with
// their name, and echo what a TCP connection sends after that.
// Services of namespace y, TCP and UDP port 80 to 8080: web-local (endpoint web-a),
// web-remote (endpoint web-b), both with NodePort, external IP and load
// balancer IP, and web-etp-local (endpoint web-a, externalTrafficPolicy:
// Local).
type pathsBed struct {
	st     fixture.State
	nodes  map[string]*pathsNode
	pods   map[string]*netnstest.Pod
	outsid *netnstest.Pod
}

type pathsNode struct {
	node  *netnstest.Node
	b     *Backend
	fw    *Firewall
	proxy *ipvs.Proxy // IPVS mode only
}

// pathService is a service of the bed: its addresses per family.
type pathService struct {
	name                      string
	clusterIP, external, lbIP byFamily
	nodePort                  uint16
	endpoint                  string
	local                     bool
}

var pathServices = []pathService{
	{name: "web-local", clusterIP: pair("10.96.0.10", "fd00:96::10"), external: pair("203.0.113.10", "fd00:203::10"),
		lbIP: pair("203.0.113.20", "fd00:203::20"), nodePort: 30010, endpoint: "y/web-a"},
	{name: "web-remote", clusterIP: pair("10.96.0.11", "fd00:96::11"), external: pair("203.0.113.11", "fd00:203::11"),
		lbIP: pair("203.0.113.21", "fd00:203::21"), nodePort: 30011, endpoint: "y/web-b"},
	{name: "web-etp-local", clusterIP: pair("10.96.0.12", "fd00:96::12"), external: pair("203.0.113.12", "fd00:203::12"),
		lbIP: pair("203.0.113.22", "fd00:203::22"), nodePort: 30012, endpoint: "y/web-a", local: true},
}

var nodeIPs = map[string]byFamily{"node-a": pair("192.168.60.1", "fd00:60::1"), "node-b": pair("192.168.60.2", "fd00:60::2")}

const webPortNumber = 8080

// newPathsBed builds the bed with the service proxy of mode ("nftables" or
// "ipvs") and the firewall configured as fw (less node name and namespace).
func newPathsBed(t *testing.T, mode string, fw FirewallConfig) *pathsBed {
	bed := &pathsBed{st: fixture.New(), nodes: map[string]*pathsNode{}, pods: map[string]*netnstest.Pod{}}
	for _, ns := range []string{"x", "y"} {
		bed.st.Namespaces = bed.st.Namespaces.With(ns, &model.Namespace{Name: ns, Labels: map[string]string{"kubernetes.io/metadata.name": ns}})
	}
	for i, name := range []string{"node-a", "node-b"} {
		n := &pathsNode{node: netnstest.NewNode(t)}
		bed.nodes[name] = n
		cidrs := prefixesOf(fmt.Sprintf("10.244.%d.0/24", i+1), fmt.Sprintf("fd00:%d::/64", i+1))
		bed.st.Nodes = bed.st.Nodes.With(name, &model.Node{Name: name, InternalIPs: []netip.Addr{nodeIPs[name].of(false), nodeIPs[name].of(true)},
			PodCIDRs: cidrs})
	}
	a, b := bed.nodes["node-a"].node, bed.nodes["node-b"].node
	wire(t, a.NS, b.NS, "peer", "peer", []string{"192.168.60.1/24", "fd00:60::1/64"}, []string{"192.168.60.2/24", "fd00:60::2/64"})
	routeVia(t, a.NS, "192.168.60.2", "10.244.2.0/24")
	routeVia(t, a.NS, "fd00:60::2", "fd00:2::/64")
	routeVia(t, b.NS, "192.168.60.1", "10.244.1.0/24", "192.168.50.0/24")
	routeVia(t, b.NS, "fd00:60::1", "fd00:1::/64", "fd00:50::/64")

	addPod := func(node, key string, labels map[string]string, v4, v6 string) {
		ips := modeltest.Addrs(v4, v6)
		p := bed.nodes[node].node.AddPod(key, ips...)
		bed.pods[key] = p
		ns, name, _ := strings.Cut(key, "/")
		bed.st.Pods = bed.st.Pods.With(model.PodKey{Namespace: ns, Name: name}, &model.Pod{Namespace: ns, Name: name, Node: node, IPs: ips, Labels: labels})
	}
	addPod("node-a", "x/client", map[string]string{"role": "client"}, "10.244.1.2", "fd00:1::2")
	addPod("node-a", "y/web-a", map[string]string{"app": "web", "pod": "web-a"}, "10.244.1.11", "fd00:1::11")
	addPod("node-b", "x/client-b", map[string]string{"role": "client"}, "10.244.2.2", "fd00:2::2")
	addPod("node-b", "y/web-b", map[string]string{"app": "web", "pod": "web-b"}, "10.244.2.11", "fd00:2::11")
	for _, key := range []string{"y/web-a", "y/web-b"} {
		bed.pods[key].Serve(t, "tcp", webPortNumber)
		bed.pods[key].Serve(t, "udp", webPortNumber)
	}
	bed.outsid = a.AddPod("outside", modeltest.Addrs("192.168.50.2", "fd00:50::2")...)

	bed.st.ServicePorts = model.Map[model.ServicePortKey, *model.ServicePort]{}
	bed.st.Endpoints = model.Map[model.ServicePortKey, model.Endpoints]{}
	for _, s := range pathServices {
		ep := bed.st.Pods.Get(model.PodKey{Namespace: "y", Name: s.endpoint[2:]})
		for _, proto := range []model.Protocol{model.TCP, model.UDP} {
			sp := &model.ServicePort{Key: model.ServicePortKey{Namespace: "y", Name: s.name, Port: proto.String(), Protocol: proto},
				ClusterIPs: []netip.Addr{s.clusterIP.of(false), s.clusterIP.of(true)}, Port: 80, NodePort: s.nodePort,
				ExternalIPs: []netip.Addr{s.external.of(false), s.external.of(true)}, LoadBalancerIPs: []netip.Addr{s.lbIP.of(false), s.lbIP.of(true)},
				ExternalTrafficLocal: s.local}
			bed.st.ServicePorts = bed.st.ServicePorts.With(sp.Key, sp)
			var eps model.Endpoints
			for _, ip := range ep.IPs {
				eps = append(eps, model.Endpoint{Addr: ip, Port: webPortNumber, Node: ep.Node,
					EndpointConditions: model.EndpointConditions{Ready: true, Serving: true}})
			}
			bed.st.Endpoints = bed.st.Endpoints.With(sp.Key, eps)
		}
	}

	for name, n := range bed.nodes {
		parts := []func(*ruleset.Table) Part{func(tbl *ruleset.Table) Part {
			cfg := fw
			cfg.NodeName, cfg.NetNSFd = name, int(n.node.NS)
			f, err := NewFirewall(tbl, cfg)
			if err != nil {
				t.Fatal(err)
			}
			n.fw = f
			return f
		}}
		switch mode {
		case "nftables":
			parts = append(parts, func(tbl *ruleset.Table) Part {
				p, err := NewServiceProxy(tbl, ServiceProxyConfig{NodeName: name, NetNSFd: int(n.node.NS)})
				if err != nil {
					t.Fatal(err)
				}
				return p
			})
		case "ipvs":
			n.proxy = newIPVSProxyIn(t, n.node, name)
			parts = append(parts, func(tbl *ruleset.Table) Part {
				return ipvs.NewNAT(tbl, ipvs.NATConfig{PlanConfig: ipvs.PlanConfig{NodeName: name}})
			})
		}
		n.b = newBackendIn(t, n.node.NS, parts...)
	}
	bed.sync(t, &model.Changes{Full: true})
	return bed
}

// newIPVSProxyIn starts the IPVS proxy in the node's namespace; without IPVS
// the test skips on the host and fails in a VM guest.
func newIPVSProxyIn(t *testing.T, node *netnstest.Node, name string) *ipvs.Proxy {
	var p *ipvs.Proxy
	err := kerneltest.Do(node.NS, func() error {
		if err := ipvs.Available(); err != nil {
			return err
		}
		var err error
		p, err = ipvs.New(ipvs.Config{PlanConfig: ipvs.PlanConfig{NodeName: name}, Logger: slog.New(slog.DiscardHandler)})
		return err
	})
	if err != nil {
		kerneltest.MissingFeature(t, "IPVS", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func (bed *pathsBed) sync(t *testing.T, ch *model.Changes) {
	t.Helper()
	for name, n := range bed.nodes {
		syncOK(t, n.b, bed.st.State, ch)
		if n.proxy != nil {
			if err := n.proxy.Sync(context.Background(), bed.st.State, ch); err != nil {
				t.Fatalf("%s: IPVS sync: %v", name, err)
			}
		}
	}
}

// setPolicies replaces every policy with those of yaml on both nodes.
func (bed *pathsBed) setPolicies(t *testing.T, yaml string) {
	t.Helper()
	var ch *model.Changes
	bed.st, ch = withPolicies(t, bed.st, yaml)
	bed.sync(t, ch)
}

// path is one way a client reaches a web pod.
type path struct {
	name, from string
	to         func(v6 bool) netip.Addr
	port       int
	// fromPod says the client is a pod (x/client or x/client-b), not the
	// outside host.
	fromPod bool
	// unmasqueraded says the web pod sees the client's own address, so that
	// a policy allowing clients by pod selector lets it in.
	unmasqueraded bool
}

func pathsTable(bed *pathsBed) []path {
	podIP := func(key string) func(bool) netip.Addr {
		return func(v6 bool) netip.Addr { return bed.pods[key].IPs[idxOf(v6)] }
	}
	addr := func(f byFamily) func(bool) netip.Addr { return f.of }
	local, remote, etp := pathServices[0], pathServices[1], pathServices[2]
	nodeA := addr(nodeIPs["node-a"])
	return []path{
		{name: "pod to pod, same node", from: "x/client", to: podIP("y/web-a"), port: webPortNumber, fromPod: true, unmasqueraded: true},
		{name: "pod to pod, other node", from: "x/client", to: podIP("y/web-b"), port: webPortNumber, fromPod: true, unmasqueraded: true},
		{name: "pod to ClusterIP, local endpoint", from: "x/client", to: addr(local.clusterIP), port: 80, fromPod: true, unmasqueraded: true},
		{name: "pod to ClusterIP, remote endpoint", from: "x/client", to: addr(remote.clusterIP), port: 80, fromPod: true, unmasqueraded: true},
		{name: "pod to its node's NodePort, local endpoint", from: "x/client", to: nodeA, port: int(local.nodePort), fromPod: true},
		{name: "pod to its node's NodePort, remote endpoint", from: "x/client", to: nodeA, port: int(remote.nodePort), fromPod: true},
		{name: "pod to external IP, local endpoint", from: "x/client", to: addr(local.external), port: 80, fromPod: true},
		{name: "pod to external IP, remote endpoint", from: "x/client", to: addr(remote.external), port: 80, fromPod: true},
		{name: "pod to load-balancer IP, local endpoint", from: "x/client", to: addr(local.lbIP), port: 80, fromPod: true},
		{name: "pod to load-balancer IP, remote endpoint", from: "x/client", to: addr(remote.lbIP), port: 80, fromPod: true},
		{name: "pod on node-b to node-a's NodePort, endpoint on node-a", from: "x/client-b", to: nodeA, port: int(local.nodePort), fromPod: true},
		{name: "outside to NodePort, externalTrafficPolicy Local", from: "outside", to: nodeA, port: int(etp.nodePort)},
		{name: "outside to load-balancer IP, externalTrafficPolicy Local", from: "outside", to: addr(etp.lbIP), port: 80},
	}
}

// pathPolicies are the policies of the truth table, with who may connect.
var pathPolicies = []struct {
	name, yaml string
	allows     func(p path) bool
	// only, if set, limits the policy to the paths it can judge.
	only func(p path) bool
}{
	{name: "no policy", allows: func(path) bool { return true }},
	{name: "web pods deny all ingress", allows: func(path) bool { return false }, yaml: `
kind: NetworkPolicy
apiVersion: networking.k8s.io/v1
metadata: {name: deny-ingress, namespace: "y"}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
`},
	{name: "clients deny all egress", allows: func(p path) bool { return !p.fromPod }, yaml: `
kind: NetworkPolicy
apiVersion: networking.k8s.io/v1
metadata: {name: deny-egress, namespace: x}
spec:
  podSelector: {matchLabels: {role: client}}
  policyTypes: [Egress]
`},
	// Whether a web pod sees a client pod's own address through a node
	// address depends on the proxy's masquerading, not on the firewall:
	// this policy judges only the paths where it does.
	{name: "web pods admit client pods only", allows: func(path) bool { return true },
		only: func(p path) bool { return p.unmasqueraded }, yaml: `
kind: NetworkPolicy
apiVersion: networking.k8s.io/v1
metadata: {name: clients-only, namespace: "y"}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{namespaceSelector: {}, podSelector: {matchLabels: {role: client}}}]
`},
}

// runPathsTruthTable probes every path of the table under every policy of
// pathPolicies, over IPv4 and IPv6, with real connections.
func runPathsTruthTable(t *testing.T, mode string) {
	bed := newPathsBed(t, mode, FirewallConfig{})
	paths := pathsTable(bed)
	for _, pol := range pathPolicies {
		t.Run(pol.name, func(t *testing.T) {
			bed.setPolicies(t, pol.yaml)
			var cases []netnstest.ProbeCase
			for _, p := range paths {
				from := bed.outsid
				if p.fromPod {
					from = bed.pods[p.from]
				}
				if pol.only != nil && !pol.only(p) {
					continue
				}
				want := pol.allows(p)
				for _, v6 := range []bool{false, true} {
					cases = append(cases, netnstest.ProbeCase{From: from, To: p.to(v6), ToName: p.name, Protocol: "tcp", Port: p.port, Want: want})
				}
			}
			netnstest.RunProbes(t, cases)
		})
	}
}

// TestKernelPolicyPathsNFTables is the firewall's path truth table with the
// nftables service proxy.
func TestKernelPolicyPathsNFTables(t *testing.T) {
	kerneltest.RequireRoot(t)
	runPathsTruthTable(t, "nftables")
}

// TestKernelPolicyPathsIPVS is the same with the IPVS proxy, which takes
// service traffic at the input hook and sends it out through output: a
// firewall on the forward hook alone never sees it. It needs IPVS, so it
// runs in the VM tier.
func TestKernelPolicyPathsIPVS(t *testing.T) {
	kerneltest.RequireRoot(t)
	runPathsTruthTable(t, "ipvs")
}

func idxOf(v6 bool) int {
	if v6 {
		return 1
	}
	return 0
}
