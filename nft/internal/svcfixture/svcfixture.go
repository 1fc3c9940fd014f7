// Package svcfixture holds the service shapes the nftables service proxy is
// tested with: the planner's golden tests and the kernel round-trip test
// read the same cases.
package svcfixture

import (
	"fmt"
	"net/netip"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
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
	ServiceCIDRs           []netip.Prefix // --service-cluster-ip-range
	NodePortCIDRs          []netip.Prefix // --nodeport-addresses
}

// Nodes are this node (two IPv4 internal addresses, one IPv6, one external)
// and another node; their pod CIDRs make the cluster CIDRs.
func Nodes() []*model.Node {
	return []*model.Node{
		{Name: NodeName, InternalIPs: modeltest.Addrs("192.168.1.10", "192.168.1.11", "fd00:1::10"), ExternalIPs: modeltest.Addrs("203.0.113.10"),
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/24"), netip.MustParsePrefix("fd00:10::/64")}},
		{Name: "node-b", InternalIPs: modeltest.Addrs("192.168.1.20"), PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.1.0/24")}},
	}
}

// Cases are the service shapes.
func Cases() []Case {
	web := func(opts ...func(*model.ServicePort)) *model.ServicePort {
		return modeltest.Svc("default", "web", 80, append([]func(*model.ServicePort){modeltest.ClusterIPs("10.96.0.10")}, opts...)...)
	}
	webKey := web().Key
	three := model.Endpoints{modeltest.Ep("10.1.0.2:8080@"+NodeName, "rs"), modeltest.Ep("10.1.1.3:8080@node-b", "rs"), modeltest.Ep("10.1.2.4:8080@node-c", "rs")}
	eps := func(k model.ServicePortKey, e model.Endpoints) map[model.ServicePortKey]model.Endpoints {
		return map[model.ServicePortKey]model.Endpoints{k: e}
	}
	one := func(name string, ports []*model.ServicePort, e map[model.ServicePortKey]model.Endpoints) Case {
		return Case{Name: name, State: modeltest.NewState(Nodes(), ports, e)}
	}
	var many model.Endpoints
	for i := range 20 {
		many = append(many, modeltest.Ep(fmt.Sprintf("10.1.%d.%d:8080@node-c", 2+i/200, 10+i%200), "rs"))
	}
	cases := []Case{
		one("empty", nil, nil),
		one("cluster-ip", []*model.ServicePort{web()}, eps(webKey, append(three, modeltest.Ep("10.1.0.9:8080@"+NodeName, "")))),
		one("no-endpoints", []*model.ServicePort{web()}, nil),
		one("dual-stack", []*model.ServicePort{web(modeltest.ClusterIPs("10.96.0.10", "fd00:96::10"), modeltest.NodePort(30080))}, eps(webKey, model.Endpoints{
			modeltest.Ep("10.1.0.2:8080@"+NodeName, "rs"), modeltest.Ep("[fd00:10::2]:8080@"+NodeName, "rs"), modeltest.Ep("[fd00:10::3]:8080@node-b", "rs")})),
		one("ipv6-only", []*model.ServicePort{web(modeltest.ClusterIPs("fd00:96::10"))}, eps(webKey, model.Endpoints{
			modeltest.Ep("[fd00:10::2]:8080@"+NodeName, "rs"), modeltest.Ep("[fd00:10::3]:8080@node-b", "rs")})),
		one("protocols", []*model.ServicePort{
			modeltest.Svc("kube-system", "dns", 53, modeltest.ClusterIPs("10.96.0.53"), modeltest.Proto(model.UDP, "dns")),
			modeltest.Svc("kube-system", "dns", 53, modeltest.ClusterIPs("10.96.0.53"), modeltest.Proto(model.TCP, "dns-tcp")),
			modeltest.Svc("telco", "sig", 3868, modeltest.ClusterIPs("10.96.0.70", "fd00:96::70"), modeltest.Proto(model.SCTP, "")),
		}, map[model.ServicePortKey]model.Endpoints{
			{Namespace: "kube-system", Name: "dns", Port: "dns", Protocol: model.UDP}:     {modeltest.Ep("10.1.0.5:53", "rs")},
			{Namespace: "kube-system", Name: "dns", Port: "dns-tcp", Protocol: model.TCP}: {modeltest.Ep("10.1.0.5:53", "rs")},
			{Namespace: "telco", Name: "sig", Protocol: model.SCTP}:                       {modeltest.Ep("10.1.0.7:3868", "rs"), modeltest.Ep("[fd00:10::7]:3868", "rs")},
		}),
		one("multiple-ports", []*model.ServicePort{
			modeltest.Svc("default", "app", 80, modeltest.ClusterIPs("10.96.0.20"), modeltest.Proto(model.TCP, "http")),
			modeltest.Svc("default", "app", 443, modeltest.ClusterIPs("10.96.0.20"), modeltest.Proto(model.TCP, "https")),
		}, map[model.ServicePortKey]model.Endpoints{
			{Namespace: "default", Name: "app", Port: "http", Protocol: model.TCP}:  {modeltest.Ep("10.1.0.2:8080", "rs"), modeltest.Ep("10.1.1.3:8080", "rs")},
			{Namespace: "default", Name: "app", Port: "https", Protocol: model.TCP}: {modeltest.Ep("10.1.0.2:8443", "rs"), modeltest.Ep("10.1.1.3:8443", "rs")},
		}),
		one("node-port", []*model.ServicePort{web(modeltest.NodePort(30080))}, eps(webKey, three)),
		{Name: "node-port-bindon-all-ip", BindAll: true, State: modeltest.NewState(Nodes(), []*model.ServicePort{web(modeltest.NodePort(30080))}, eps(webKey, three))},
		// --nodeport-addresses: the external address and the IPv6 one,
		// not the node IPv4 address.
		{Name: "node-port-addresses", NodePortCIDRs: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("fd00:1::/64")},
			State: modeltest.NewState(Nodes(), []*model.ServicePort{web(modeltest.ClusterIPs("10.96.0.10", "fd00:96::10"), modeltest.NodePort(30080))}, eps(webKey, three))},
		one("external-and-load-balancer-ips", []*model.ServicePort{web(func(sp *model.ServicePort) {
			sp.ExternalIPs = modeltest.Addrs("198.51.100.7")
			sp.LoadBalancerIPs = modeltest.Addrs("198.51.100.80", "2001:db8::80")
		})}, eps(webKey, three)),
		one("terminating-fallback", []*model.ServicePort{web()}, eps(webKey, model.Endpoints{
			modeltest.Ep("10.1.0.2:8080", "st"), modeltest.Ep("10.1.0.3:8080", "t"), modeltest.Ep("10.1.0.4:8080", "")})),
		one("ready-wins-over-terminating", []*model.ServicePort{web()}, eps(webKey, model.Endpoints{
			modeltest.Ep("10.1.0.2:8080", "st"), modeltest.Ep("10.1.0.3:8080", "rs")})),
		one("external-traffic-local", []*model.ServicePort{web(modeltest.NodePort(30080), func(sp *model.ServicePort) {
			sp.ExternalTrafficLocal = true
			sp.ExternalIPs = modeltest.Addrs("198.51.100.7")
		})}, eps(webKey, three)),
		one("external-traffic-local-none-here", []*model.ServicePort{web(modeltest.NodePort(30080), func(sp *model.ServicePort) {
			sp.ExternalTrafficLocal = true
			sp.LoadBalancerIPs = modeltest.Addrs("198.51.100.80")
		})}, eps(webKey, three[1:])),
		one("internal-traffic-local", []*model.ServicePort{
			web(func(sp *model.ServicePort) { sp.InternalTrafficLocal = true }),
			modeltest.Svc("default", "elsewhere", 81, modeltest.ClusterIPs("10.96.0.11"), func(sp *model.ServicePort) { sp.InternalTrafficLocal = true }),
		}, map[model.ServicePortKey]model.Endpoints{webKey: three,
			{Namespace: "default", Name: "elsewhere", Protocol: model.TCP}: three[1:]}),
		one("session-affinity", []*model.ServicePort{
			web(modeltest.NodePort(30080), modeltest.Affinity(10800)),
			modeltest.Svc("default", "web6", 80, modeltest.ClusterIPs("fd00:96::11"), modeltest.Affinity(100)),
			modeltest.Svc("default", "mixed", 80, modeltest.ClusterIPs("10.96.0.12"), modeltest.Affinity(60)),
		}, map[model.ServicePortKey]model.Endpoints{webKey: three,
			{Namespace: "default", Name: "web6", Protocol: model.TCP}:  {modeltest.Ep("[fd00:10::2]:8080@"+NodeName, "rs"), modeltest.Ep("[fd00:10::3]:8080@node-b", "rs")},
			{Namespace: "default", Name: "mixed", Protocol: model.TCP}: {modeltest.Ep("10.1.0.2:8080", "rs"), modeltest.Ep("10.1.0.3:9090", "rs")}}),
		{Name: "masquerade-all", MasqueradeAll: true, State: modeltest.NewState(Nodes(), []*model.ServicePort{web()}, eps(webKey, three))},
		{Name: "service-cidr-flag", ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:96::/112")},
			State: modeltest.NewState(Nodes(), []*model.ServicePort{web(modeltest.ClusterIPs("10.96.0.10", "fd00:96::10"))}, eps(webKey, three))},
		{Name: "cluster-cidr-flag", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/16")},
			State: modeltest.NewState(Nodes(), []*model.ServicePort{web()}, eps(webKey, three))},
		one("address-conflict", []*model.ServicePort{
			modeltest.Svc("a", "first", 80, modeltest.ClusterIPs("10.96.0.1"), func(sp *model.ServicePort) { sp.ExternalIPs = modeltest.Addrs("198.51.100.7") }),
			modeltest.Svc("b", "second", 80, modeltest.ClusterIPs("10.96.0.2"), func(sp *model.ServicePort) { sp.ExternalIPs = modeltest.Addrs("198.51.100.7") }),
		}, map[model.ServicePortKey]model.Endpoints{
			{Namespace: "a", Name: "first", Protocol: model.TCP}:  {modeltest.Ep("10.1.0.2:80", "rs")},
			{Namespace: "b", Name: "second", Protocol: model.TCP}: {modeltest.Ep("10.1.0.3:80", "rs")}}),
		one("many-endpoints", []*model.ServicePort{web()}, eps(webKey, many)),
		// IPv4 ranges only: the IPv6 load-balancer IP admits no one.
		one("load-balancer-source-ranges", []*model.ServicePort{web(modeltest.ClusterIPs("10.96.0.10", "fd00:96::10"), modeltest.NodePort(30080), func(sp *model.ServicePort) {
			sp.LoadBalancerIPs = modeltest.Addrs("198.51.100.80", "198.51.100.81", "2001:db8::80")
			sp.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("203.0.113.0/25")}
		})}, eps(webKey, three)),
		topology(web, webKey),
	}
	return cases
}

// topology: this node is in zone a. web's slices hint two of its three
// endpoints to zone a, so this node uses those for traffic of policy
// Cluster, but its NodePort of policy Local only its own. near asks for
// PreferSameNode and has no hints: its endpoint on this node.
func topology(web func(...func(*model.ServicePort)) *model.ServicePort, webKey model.ServicePortKey) Case {
	nodes := Nodes()
	nodes[0].Zone, nodes[1].Zone = "a", "b"
	hinted := func(spec, zone string) model.Endpoint {
		e := modeltest.Ep(spec, "rs")
		e.Zone, e.Hints = zone, &model.EndpointHints{ForZones: []string{zone}}
		return e
	}
	near := modeltest.Svc("default", "near", 80, modeltest.ClusterIPs("10.96.0.20"), func(sp *model.ServicePort) {
		sp.TrafficDistribution = model.DistributeSameNode
	})
	local := modeltest.Svc("default", "local", 80, modeltest.ClusterIPs("10.96.0.30"), modeltest.NodePort(30030), func(sp *model.ServicePort) {
		sp.ExternalTrafficLocal = true
		sp.TrafficDistribution = model.DistributeSameZone
	})
	zoned := func(spec, zone string) model.Endpoint {
		e := modeltest.Ep(spec, "rs")
		e.Zone = zone
		return e
	}
	return Case{Name: "topology", State: modeltest.NewState(nodes, []*model.ServicePort{web(modeltest.NodePort(30080)), near, local},
		map[model.ServicePortKey]model.Endpoints{
			webKey:   {hinted("10.1.0.2:8080@"+NodeName, "a"), hinted("10.1.1.3:8080@node-b", "b"), hinted("10.1.2.4:8080@node-c", "a")},
			near.Key: {zoned("10.1.0.5:8080@"+NodeName, "a"), zoned("10.1.1.5:8080@node-b", "b")},
			// Policy Local wins over the zone at the NodePort; the zone
			// picks at the cluster IP.
			local.Key: {zoned("10.1.0.6:8080@"+NodeName, "a"), zoned("10.1.1.6:8080@node-b", "b"), zoned("10.1.2.6:8080@node-c", "a")},
		})}
}
