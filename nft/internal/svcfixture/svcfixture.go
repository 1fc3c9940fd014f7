// Package svcfixture holds the service shapes the nftables service proxy is
// tested with: the planner's golden tests and the kernel round-trip test
// read the same cases.
package svcfixture

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/nfrouter/nfrouter/model"
)

// NodeName is the node the cases are planned for.
const NodeName = "node-a"

// Case is one service shape.
type Case struct {
	Name  string
	State *model.State
	// Planner options.
	BindAll, MasqueradeAll bool
	ClusterCIDRs           []netip.Prefix
}

// Svc builds a TCP service port; opts tweak it.
func Svc(ns, name string, port uint16, opts ...func(*model.ServicePort)) *model.ServicePort {
	sp := &model.ServicePort{Key: model.ServicePortKey{Namespace: ns, Name: name, Protocol: model.TCP}, Port: port}
	for _, o := range opts {
		o(sp)
	}
	return sp
}

// Addrs parses addresses.
func Addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// ClusterIPs sets the cluster IPs.
func ClusterIPs(ss ...string) func(*model.ServicePort) {
	return func(sp *model.ServicePort) { sp.ClusterIPs = Addrs(ss...) }
}

// Proto sets the protocol and port name.
func Proto(p model.Protocol, portName string) func(*model.ServicePort) {
	return func(sp *model.ServicePort) { sp.Key.Protocol, sp.Key.Port = p, portName }
}

// NodePort sets the NodePort.
func NodePort(n uint16) func(*model.ServicePort) {
	return func(sp *model.ServicePort) { sp.NodePort = n }
}

// Affinity sets ClientIP session affinity.
func Affinity(seconds int32) func(*model.ServicePort) {
	return func(sp *model.ServicePort) { sp.AffinityTimeout = seconds }
}

// Ep builds an endpoint "addr:port@node" with conditions r (ready), s
// (serving), t (terminating).
func Ep(spec, conds string) model.Endpoint {
	at := strings.SplitN(spec, "@", 2)
	ap := netip.MustParseAddrPort(at[0])
	e := model.Endpoint{Addr: ap.Addr(), Port: ap.Port()}
	if len(at) == 2 {
		e.Node = at[1]
	}
	e.Ready = strings.Contains(conds, "r")
	e.Serving = strings.Contains(conds, "s")
	e.Terminating = strings.Contains(conds, "t")
	return e
}

// NewState returns a state with the nodes, service ports and endpoints.
func NewState(nodes []*model.Node, ports []*model.ServicePort, eps map[model.ServicePortKey]model.Endpoints) *model.State {
	st := &model.State{ServicePorts: map[model.ServicePortKey]*model.ServicePort{},
		Endpoints: map[model.ServicePortKey]model.Endpoints{}, Nodes: map[string]*model.Node{}}
	for _, sp := range ports {
		st.ServicePorts[sp.Key] = sp
	}
	for k, e := range eps {
		st.Endpoints[k] = e
	}
	for _, n := range nodes {
		st.Nodes[n.Name] = n
	}
	return st
}

// Nodes are this node (two IPv4 internal addresses, one IPv6, one external)
// and another node; their pod CIDRs make the cluster CIDRs.
func Nodes() []*model.Node {
	return []*model.Node{
		{Name: NodeName, InternalIPs: Addrs("192.168.1.10", "192.168.1.11", "fd00:1::10"), ExternalIPs: Addrs("203.0.113.10"),
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/24"), netip.MustParsePrefix("fd00:10::/64")}},
		{Name: "node-b", InternalIPs: Addrs("192.168.1.20"), PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.1.0/24")}},
	}
}

// Cases are the service shapes.
func Cases() []Case {
	web := func(opts ...func(*model.ServicePort)) *model.ServicePort {
		return Svc("default", "web", 80, append([]func(*model.ServicePort){ClusterIPs("10.96.0.10")}, opts...)...)
	}
	webKey := web().Key
	three := model.Endpoints{Ep("10.1.0.2:8080@"+NodeName, "rs"), Ep("10.1.1.3:8080@node-b", "rs"), Ep("10.1.2.4:8080@node-c", "rs")}
	eps := func(k model.ServicePortKey, e model.Endpoints) map[model.ServicePortKey]model.Endpoints {
		return map[model.ServicePortKey]model.Endpoints{k: e}
	}
	one := func(name string, ports []*model.ServicePort, e map[model.ServicePortKey]model.Endpoints) Case {
		return Case{Name: name, State: NewState(Nodes(), ports, e)}
	}
	var many model.Endpoints
	for i := range 20 {
		many = append(many, Ep(fmt.Sprintf("10.1.%d.%d:8080@node-c", 2+i/200, 10+i%200), "rs"))
	}
	cases := []Case{
		one("empty", nil, nil),
		one("cluster-ip", []*model.ServicePort{web()}, eps(webKey, append(three, Ep("10.1.0.9:8080@"+NodeName, "")))),
		one("no-endpoints", []*model.ServicePort{web()}, nil),
		one("dual-stack", []*model.ServicePort{web(ClusterIPs("10.96.0.10", "fd00:96::10"), NodePort(30080))}, eps(webKey, model.Endpoints{
			Ep("10.1.0.2:8080@"+NodeName, "rs"), Ep("[fd00:10::2]:8080@"+NodeName, "rs"), Ep("[fd00:10::3]:8080@node-b", "rs")})),
		one("ipv6-only", []*model.ServicePort{web(ClusterIPs("fd00:96::10"))}, eps(webKey, model.Endpoints{
			Ep("[fd00:10::2]:8080@"+NodeName, "rs"), Ep("[fd00:10::3]:8080@node-b", "rs")})),
		one("protocols", []*model.ServicePort{
			Svc("kube-system", "dns", 53, ClusterIPs("10.96.0.53"), Proto(model.UDP, "dns")),
			Svc("kube-system", "dns", 53, ClusterIPs("10.96.0.53"), Proto(model.TCP, "dns-tcp")),
			Svc("telco", "sig", 3868, ClusterIPs("10.96.0.70", "fd00:96::70"), Proto(model.SCTP, "")),
		}, map[model.ServicePortKey]model.Endpoints{
			{Namespace: "kube-system", Name: "dns", Port: "dns", Protocol: model.UDP}:     {Ep("10.1.0.5:53", "rs")},
			{Namespace: "kube-system", Name: "dns", Port: "dns-tcp", Protocol: model.TCP}: {Ep("10.1.0.5:53", "rs")},
			{Namespace: "telco", Name: "sig", Protocol: model.SCTP}:                       {Ep("10.1.0.7:3868", "rs"), Ep("[fd00:10::7]:3868", "rs")},
		}),
		one("multiple-ports", []*model.ServicePort{
			Svc("default", "app", 80, ClusterIPs("10.96.0.20"), Proto(model.TCP, "http")),
			Svc("default", "app", 443, ClusterIPs("10.96.0.20"), Proto(model.TCP, "https")),
		}, map[model.ServicePortKey]model.Endpoints{
			{Namespace: "default", Name: "app", Port: "http", Protocol: model.TCP}:  {Ep("10.1.0.2:8080", "rs"), Ep("10.1.1.3:8080", "rs")},
			{Namespace: "default", Name: "app", Port: "https", Protocol: model.TCP}: {Ep("10.1.0.2:8443", "rs"), Ep("10.1.1.3:8443", "rs")},
		}),
		one("node-port", []*model.ServicePort{web(NodePort(30080))}, eps(webKey, three)),
		{Name: "node-port-bindon-all-ip", BindAll: true, State: NewState(Nodes(), []*model.ServicePort{web(NodePort(30080))}, eps(webKey, three))},
		one("external-and-load-balancer-ips", []*model.ServicePort{web(func(sp *model.ServicePort) {
			sp.ExternalIPs = Addrs("198.51.100.7")
			sp.LoadBalancerIPs = Addrs("198.51.100.80", "2001:db8::80")
		})}, eps(webKey, three)),
		one("terminating-fallback", []*model.ServicePort{web()}, eps(webKey, model.Endpoints{
			Ep("10.1.0.2:8080", "st"), Ep("10.1.0.3:8080", "t"), Ep("10.1.0.4:8080", "")})),
		one("ready-wins-over-terminating", []*model.ServicePort{web()}, eps(webKey, model.Endpoints{
			Ep("10.1.0.2:8080", "st"), Ep("10.1.0.3:8080", "rs")})),
		one("external-traffic-local", []*model.ServicePort{web(NodePort(30080), func(sp *model.ServicePort) {
			sp.ExternalTrafficLocal = true
			sp.ExternalIPs = Addrs("198.51.100.7")
		})}, eps(webKey, three)),
		one("external-traffic-local-none-here", []*model.ServicePort{web(NodePort(30080), func(sp *model.ServicePort) {
			sp.ExternalTrafficLocal = true
			sp.LoadBalancerIPs = Addrs("198.51.100.80")
		})}, eps(webKey, three[1:])),
		one("internal-traffic-local", []*model.ServicePort{
			web(func(sp *model.ServicePort) { sp.InternalTrafficLocal = true }),
			Svc("default", "elsewhere", 81, ClusterIPs("10.96.0.11"), func(sp *model.ServicePort) { sp.InternalTrafficLocal = true }),
		}, map[model.ServicePortKey]model.Endpoints{webKey: three,
			{Namespace: "default", Name: "elsewhere", Protocol: model.TCP}: three[1:]}),
		one("session-affinity", []*model.ServicePort{
			web(NodePort(30080), Affinity(10800)),
			Svc("default", "web6", 80, ClusterIPs("fd00:96::11"), Affinity(100)),
			Svc("default", "mixed", 80, ClusterIPs("10.96.0.12"), Affinity(60)),
		}, map[model.ServicePortKey]model.Endpoints{webKey: three,
			{Namespace: "default", Name: "web6", Protocol: model.TCP}:  {Ep("[fd00:10::2]:8080@"+NodeName, "rs"), Ep("[fd00:10::3]:8080@node-b", "rs")},
			{Namespace: "default", Name: "mixed", Protocol: model.TCP}: {Ep("10.1.0.2:8080", "rs"), Ep("10.1.0.3:9090", "rs")}}),
		{Name: "masquerade-all", MasqueradeAll: true, State: NewState(Nodes(), []*model.ServicePort{web()}, eps(webKey, three))},
		{Name: "cluster-cidr-flag", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/16")},
			State: NewState(Nodes(), []*model.ServicePort{web()}, eps(webKey, three))},
		one("address-conflict", []*model.ServicePort{
			Svc("a", "first", 80, ClusterIPs("10.96.0.1"), func(sp *model.ServicePort) { sp.ExternalIPs = Addrs("198.51.100.7") }),
			Svc("b", "second", 80, ClusterIPs("10.96.0.2"), func(sp *model.ServicePort) { sp.ExternalIPs = Addrs("198.51.100.7") }),
		}, map[model.ServicePortKey]model.Endpoints{
			{Namespace: "a", Name: "first", Protocol: model.TCP}:  {Ep("10.1.0.2:80", "rs")},
			{Namespace: "b", Name: "second", Protocol: model.TCP}: {Ep("10.1.0.3:80", "rs")}}),
		one("many-endpoints", []*model.ServicePort{web()}, eps(webKey, many)),
	}
	return cases
}
