package ipvs

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
)

// TestPlanShapes plans one state per service shape from scratch and compares
// the desired virtual services, dummy addresses and problems with golden files.
func TestPlanShapes(t *testing.T) {
	node := &model.Node{
		Name:        thisNode,
		InternalIPs: addrs("192.168.1.10", "192.168.1.11", "fd00:1::10"),
		ExternalIPs: addrs("203.0.113.10"),
	}
	web := func(opts ...func(*model.ServicePort)) *model.ServicePort {
		return svc("default", "web", 80, append([]func(*model.ServicePort){clusterIPs("10.96.0.10")}, opts...)...)
	}
	webKey := web().Key
	threeEps := model.Endpoints{
		ep("10.1.0.2:8080@"+thisNode, "rs"), ep("10.1.1.3:8080@node-b", "rs"), ep("10.1.2.4:8080@node-c", "rs"),
	}
	nodePort := func(sp *model.ServicePort) { sp.NodePort = 30080 }
	cases := []struct {
		name    string
		ports   []*model.ServicePort
		eps     map[model.ServicePortKey]model.Endpoints
		bindAll bool
		cidrs   []netip.Prefix // --nodeport-addresses
	}{
		{name: "cluster-ip", ports: []*model.ServicePort{web()},
			eps: map[model.ServicePortKey]model.Endpoints{webKey: append(threeEps, ep("10.1.0.9:8080@"+thisNode, ""))}},
		{name: "no-endpoints", ports: []*model.ServicePort{web()}},
		{name: "dual-stack", ports: []*model.ServicePort{web(clusterIPs("10.96.0.10", "fd00:96::10"), nodePort)},
			eps: map[model.ServicePortKey]model.Endpoints{webKey: {
				ep("10.1.0.2:8080@"+thisNode, "rs"), ep("[fd00:10::2]:8080@"+thisNode, "rs"), ep("[fd00:10::3]:8080@node-b", "rs"),
			}}},
		{name: "protocols", ports: []*model.ServicePort{
			svc("kube-system", "dns", 53, clusterIPs("10.96.0.53"), proto(model.UDP, "dns")),
			svc("kube-system", "dns", 53, clusterIPs("10.96.0.53"), proto(model.TCP, "dns-tcp")),
			svc("telco", "sig", 3868, clusterIPs("10.96.0.70", "fd00:96::70"), proto(model.SCTP, "")),
		}, eps: map[model.ServicePortKey]model.Endpoints{
			{Namespace: "kube-system", Name: "dns", Port: "dns", Protocol: model.UDP}:     {ep("10.1.0.5:53", "rs")},
			{Namespace: "kube-system", Name: "dns", Port: "dns-tcp", Protocol: model.TCP}: {ep("10.1.0.5:53", "rs")},
			{Namespace: "telco", Name: "sig", Protocol: model.SCTP}:                       {ep("10.1.0.7:3868", "rs"), ep("[fd00:10::7]:3868", "rs")},
		}},
		{name: "node-port", ports: []*model.ServicePort{web(nodePort)},
			eps: map[model.ServicePortKey]model.Endpoints{webKey: threeEps}},
		{name: "node-port-bindon-all-ip", ports: []*model.ServicePort{web(nodePort)}, bindAll: true,
			eps: map[model.ServicePortKey]model.Endpoints{webKey: threeEps}},
		{name: "node-port-addresses", ports: []*model.ServicePort{web(clusterIPs("10.96.0.10", "fd00:96::10"), nodePort)},
			cidrs: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("fd00:1::/64")},
			eps:   map[model.ServicePortKey]model.Endpoints{webKey: threeEps}},
		{name: "external-and-load-balancer-ips", ports: []*model.ServicePort{web(func(sp *model.ServicePort) {
			sp.ExternalIPs = addrs("198.51.100.7")
			sp.LoadBalancerIPs = addrs("198.51.100.80", "2001:db8::80")
		})}, eps: map[model.ServicePortKey]model.Endpoints{webKey: threeEps}},
		{name: "terminating-fallback", ports: []*model.ServicePort{web()},
			eps: map[model.ServicePortKey]model.Endpoints{webKey: {
				ep("10.1.0.2:8080", "st"), ep("10.1.0.3:8080", "t"), ep("10.1.0.4:8080", ""),
			}}},
		{name: "ready-wins-over-terminating", ports: []*model.ServicePort{web()},
			eps: map[model.ServicePortKey]model.Endpoints{webKey: {ep("10.1.0.2:8080", "st"), ep("10.1.0.3:8080", "rs")}}},
		{name: "external-traffic-local", ports: []*model.ServicePort{web(nodePort, func(sp *model.ServicePort) {
			sp.ExternalTrafficLocal = true
			sp.ExternalIPs = addrs("198.51.100.7")
		})}, eps: map[model.ServicePortKey]model.Endpoints{webKey: threeEps}},
		{name: "external-traffic-local-none-here", ports: []*model.ServicePort{web(nodePort, func(sp *model.ServicePort) {
			sp.ExternalTrafficLocal = true
			sp.LoadBalancerIPs = addrs("198.51.100.80")
		})}, eps: map[model.ServicePortKey]model.Endpoints{webKey: threeEps[1:]}},
		{name: "internal-traffic-local", ports: []*model.ServicePort{
			web(func(sp *model.ServicePort) { sp.InternalTrafficLocal = true }),
			svc("default", "elsewhere", 81, clusterIPs("10.96.0.11"), func(sp *model.ServicePort) { sp.InternalTrafficLocal = true }),
		}, eps: map[model.ServicePortKey]model.Endpoints{
			webKey: threeEps,
			{Namespace: "default", Name: "elsewhere", Protocol: model.TCP}: threeEps[1:],
		}},
		{name: "local-annotation", ports: []*model.ServicePort{web(nodePort, func(sp *model.ServicePort) { sp.Options.Local = true })},
			eps: map[model.ServicePortKey]model.Endpoints{webKey: threeEps}},
		{name: "schedulers", ports: []*model.ServicePort{
			svc("s", "lc", 80, clusterIPs("10.96.1.1"), func(sp *model.ServicePort) { sp.Options.Scheduler = "lc" }),
			svc("s", "dh", 80, clusterIPs("10.96.1.2"), func(sp *model.ServicePort) { sp.Options.Scheduler = "dh" }),
			svc("s", "sh", 80, clusterIPs("10.96.1.3"), func(sp *model.ServicePort) {
				sp.Options.Scheduler, sp.Options.SchedFlags = "sh", "flag-1,flag-2"
			}),
			svc("s", "mh", 80, clusterIPs("10.96.1.4"), func(sp *model.ServicePort) {
				sp.Options.Scheduler, sp.Options.SchedFlags = "mh", "flag-1, flag-2,flag-3"
			}),
			svc("s", "wrr", 80, clusterIPs("10.96.1.5"), func(sp *model.ServicePort) { sp.Options.Scheduler = "WRR" }),
		}},
		{name: "session-affinity", ports: []*model.ServicePort{web(nodePort, func(sp *model.ServicePort) { sp.AffinityTimeout = 10800 })},
			eps: map[model.ServicePortKey]model.Endpoints{webKey: threeEps}},
		{name: "invalid-annotations-new-service", ports: []*model.ServicePort{
			svc("s", "bogus", 80, clusterIPs("10.96.1.1"), func(sp *model.ServicePort) { sp.Options.Scheduler = "fastest" }),
			svc("s", "flags-on-rr", 80, clusterIPs("10.96.1.2"), func(sp *model.ServicePort) { sp.Options.SchedFlags = "flag-1" }),
			svc("s", "bad-flag", 80, clusterIPs("10.96.1.3"), func(sp *model.ServicePort) {
				sp.Options.Scheduler, sp.Options.SchedFlags = "sh", "flag-9"
			}),
		}},
		{name: "address-conflict", ports: []*model.ServicePort{
			svc("a", "first", 80, clusterIPs("10.96.0.1"), func(sp *model.ServicePort) { sp.ExternalIPs = addrs("198.51.100.7") }),
			svc("b", "second", 80, clusterIPs("10.96.0.2"), func(sp *model.ServicePort) { sp.ExternalIPs = addrs("198.51.100.7") }),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlanner(PlanConfig{NodeName: thisNode, NodePortBindOnAllIPs: tc.bindAll, NodePortCIDRs: tc.cidrs})
			res := p.Update(newState(node, tc.ports, tc.eps), &model.Changes{Full: true})
			compareGolden(t, "plan/"+tc.name, dumpPlanner(p)+dumpProblems(res.Problems))
		})
	}
}

func dumpProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("problem " + p.Port.String() + " " + p.Reason + ": " + p.Message + "\n")
	}
	return b.String()
}
