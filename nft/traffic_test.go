package nft

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
	"github.com/nfrouter/nfrouter/nft/netpol"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// cluster is the upstream NetworkPolicy e2e model: namespaces x, y, z with
// pods a, b, c each, all on node-a here, each serving TCP 80, 81, 82 and UDP
// 80 (ports named serve-80-tcp, …, as upstream does).
type cluster struct {
	node  *netnstest.Node
	f     *Backend
	st    fixture.State
	pods  map[string]*netnstest.Pod // "x/a"
	names []string
}

var probePorts = []struct {
	proto string
	port  int
}{{"tcp", 80}, {"tcp", 81}, {"tcp", 82}, {"udp", 80}}

func newCluster(t *testing.T, defaultDeny bool) *cluster {
	node := netnstest.NewNode(t)
	c := &cluster{node: node, pods: map[string]*netnstest.Pod{}, st: fixture.New()}
	c.f = newFirewallIn(t, node.NS, defaultDeny)
	for i, ns := range []string{"x", "y", "z"} {
		c.st.Namespaces[ns] = &model.Namespace{Name: ns, Labels: map[string]string{"ns": ns, "kubernetes.io/metadata.name": ns}}
		for j, name := range []string{"a", "b", "c"} {
			n := i*3 + j + 1
			ips := []netip.Addr{netip.AddrFrom4([4]byte{10, 244, 1, byte(n)}), netip.MustParseAddr(fmt.Sprintf("fd00:1::%d", n))}
			key := ns + "/" + name
			p := node.AddPod(key, ips...)
			for _, pp := range probePorts {
				p.Serve(t, pp.proto, pp.port)
			}
			c.pods[key] = p
			c.names = append(c.names, key)
			c.st.Pods[model.PodKey{Namespace: ns, Name: name}] = c.modelPod(ns, name, ips)
		}
	}
	return c
}

func (c *cluster) modelPod(ns, name string, ips []netip.Addr) *model.Pod {
	mp := &model.Pod{Namespace: ns, Name: name, Node: "node-a", IPs: ips, Labels: map[string]string{"pod": name}}
	for _, pp := range probePorts {
		mp.Ports = append(mp.Ports, model.ContainerPort{Name: fmt.Sprintf("serve-%d-%s", pp.port, pp.proto),
			Protocol: map[string]model.Protocol{"tcp": model.TCP, "udp": model.UDP}[pp.proto], Port: uint16(pp.port)})
	}
	return mp
}

// setPolicies replaces all policies with those of yaml and syncs.
func (c *cluster) setPolicies(t *testing.T, yaml string) {
	t.Helper()
	var ch *model.Changes
	c.st, ch = withPolicies(t, c.st, yaml)
	syncOK(t, c.f, c.st.State, ch)
}

// withPolicies returns a copy of st whose policies are those of yaml, and
// the changes between the two.
func withPolicies(t *testing.T, st fixture.State, yaml string) (fixture.State, *model.Changes) {
	t.Helper()
	next := st.Clone()
	ch := &model.Changes{}
	for k := range next.Policies {
		delete(next.Policies, k)
		ch.Policies.Add(k)
	}
	if err := next.Apply([]byte(yaml)); err != nil {
		t.Fatal(err)
	}
	for k := range next.Policies {
		ch.Policies.Add(k)
	}
	return next, ch
}

// check probes every pair of distinct pods on the given ports against want.
func (c *cluster) check(t *testing.T, v6 bool, want func(from, to string, proto string, port int) bool) {
	t.Helper()
	var cases []netnstest.ProbeCase
	for _, from := range c.names {
		for _, to := range c.names {
			if from == to {
				continue
			}
			dst := c.pods[to].IPs[0]
			if v6 {
				dst = c.pods[to].IPs[1]
			}
			src := c.pods[from].IPs[idxOf(v6)]
			for _, pp := range probePorts {
				w := want(from, to, pp.proto, pp.port)
				cases = append(cases, netnstest.ProbeCase{From: c.pods[from], To: dst, ToName: to, Protocol: pp.proto, Port: pp.port, Want: w})
				c.checkJudge(t, from, to, ruleset.Packet{Src: src, Dst: dst, Proto: protoNumber[pp.proto], DPort: uint16(pp.port)}, w)
			}
		}
	}
	netnstest.RunProbes(t, cases)
}

var protoNumber = map[string]uint8{"tcp": 6, "udp": 17, "sctp": 132}

// checkJudge asks the table's own trace (what `nfrouter explain` answers)
// about a probe, which the kernel must answer the same way.
func (c *cluster) checkJudge(t *testing.T, from, to string, pkt ruleset.Packet, want bool) {
	t.Helper()
	v, err := netpol.Judge(c.f.Table(), pkt)
	if err != nil {
		t.Fatalf("judge %s -> %s: %v", from, to, err)
	}
	if v.Allowed != want {
		t.Errorf("judge %s -> %s (%s) %d/%d: allowed=%v, want %v; egress %v, ingress %v", from, to, pkt.Dst, pkt.Proto, pkt.DPort,
			v.Allowed, want, v.Egress.Steps, v.Ingress.Steps)
	}
}

func ns(pod string) string { return strings.Split(pod, "/")[0] }

// e2eCases are upstream's test/e2e/network/netpol cases, transcribed: the
// policies (in x unless said) and who may connect to whom on which port.
var e2eCases = []struct {
	name     string
	policies string
	want     func(from, to, proto string, port int) bool
}{
	{"should support a 'default-deny-ingress' policy", `
kind: NetworkPolicy
metadata: {name: deny-ingress, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress]}`,
		func(from, to, _ string, _ int) bool { return ns(to) != "x" }},
	{"should support a 'default-deny-all' policy", `
kind: NetworkPolicy
metadata: {name: deny-all, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}`,
		func(from, to, _ string, _ int) bool { return ns(to) != "x" && ns(from) != "x" }},
	{"should enforce policy to allow traffic from pods within server namespace based on PodSelector", `
kind: NetworkPolicy
metadata: {name: x-a-from-b, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{podSelector: {matchLabels: {pod: b}}}]}]`,
		func(from, to, _ string, _ int) bool { return to != "x/a" || from == "x/b" }},
	{"should enforce policy to allow traffic only from a different namespace, based on NamespaceSelector", `
kind: NetworkPolicy
metadata: {name: x-a-from-y, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {ns: "y"}}}]}]`,
		func(from, to, _ string, _ int) bool { return to != "x/a" || ns(from) == "y" }},
	{"should enforce policy based on PodSelector or NamespaceSelector", `
kind: NetworkPolicy
metadata: {name: or, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{namespaceSelector: {matchExpressions: [{key: ns, operator: NotIn, values: [x]}]}}, {podSelector: {matchLabels: {pod: b}}}]}]`,
		func(from, to, _ string, _ int) bool { return to != "x/a" || ns(from) != "x" || from == "x/b" }},
	{"should enforce policy based on PodSelector and NamespaceSelector", `
kind: NetworkPolicy
metadata: {name: and, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{namespaceSelector: {matchExpressions: [{key: ns, operator: NotIn, values: [x]}]}, podSelector: {matchLabels: {pod: b}}}]}]`,
		func(from, to, _ string, _ int) bool { return to != "x/a" || from == "y/b" || from == "z/b" }},
	{"should enforce policy based on Ports", `
kind: NetworkPolicy
metadata: {name: port81, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {ns: "y"}}}], ports: [{port: 81}]}]`,
		func(from, to, proto string, port int) bool {
			return to != "x/a" || (ns(from) == "y" && proto == "tcp" && port == 81)
		}},
	{"should enforce multiple, stacked policies with overlapping podSelectors", `
kind: NetworkPolicy
metadata: {name: a-from-y-80, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {ns: "y"}}}], ports: [{port: 80}]}]
---
kind: NetworkPolicy
metadata: {name: all-from-z-81, namespace: x}
spec:
  podSelector: {}
  ingress: [{from: [{namespaceSelector: {matchLabels: {ns: z}}}], ports: [{port: 81}]}]`,
		func(from, to, proto string, port int) bool {
			if ns(to) != "x" {
				return true
			}
			return (to == "x/a" && ns(from) == "y" && proto == "tcp" && port == 80) || (ns(from) == "z" && proto == "tcp" && port == 81)
		}},
	{"should support allow-all policy", `
kind: NetworkPolicy
metadata: {name: allow-all, namespace: x}
spec: {podSelector: {}, ingress: [{}]}`,
		func(string, string, string, int) bool { return true }},
	{"should allow ingress access on one named port", `
kind: NetworkPolicy
metadata: {name: named, namespace: x}
spec:
  podSelector: {}
  ingress: [{ports: [{port: serve-81-tcp}]}]`,
		func(from, to, proto string, port int) bool { return ns(to) != "x" || (proto == "tcp" && port == 81) }},
	{"should allow egress access on one named port", `
kind: NetworkPolicy
metadata: {name: named-egress, namespace: x}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{ports: [{protocol: UDP, port: serve-80-udp}]}]`,
		func(from, to, proto string, port int) bool { return ns(from) != "x" || (proto == "udp" && port == 80) }},
	{"should deny egress from pods based on PodSelector", `
kind: NetworkPolicy
metadata: {name: deny-egress-a, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}, policyTypes: [Egress]}`,
		func(from, to, _ string, _ int) bool { return from != "x/a" }},
	{"should work with Ingress, Egress specified together", `
kind: NetworkPolicy
metadata: {name: both, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  policyTypes: [Ingress, Egress]
  ingress: [{from: [{podSelector: {matchLabels: {pod: b}}}]}]
  egress: [{to: [{namespaceSelector: {matchLabels: {ns: "y"}}}]}]`,
		func(from, to, _ string, _ int) bool {
			if from == "x/a" && ns(to) != "y" {
				return false
			}
			return to != "x/a" || from == "x/b"
		}},
	{"should enforce except clause while egress access to server in CIDR block", `
kind: NetworkPolicy
metadata: {name: cidr-except, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  policyTypes: [Egress]
  egress: [{to: [{ipBlock: {cidr: 10.244.1.0/24, except: [10.244.1.5/32]}}, {ipBlock: {cidr: "fd00:1::/64", except: ["fd00:1::5/128"]}}]}]`,
		func(from, to, _ string, _ int) bool { return from != "x/a" || to != "y/b" }},
	{"should not allow access by TCP when a policy specifies only UDP", `
kind: NetworkPolicy
metadata: {name: udp-only, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{ports: [{protocol: UDP, port: 80}]}]`,
		func(from, to, proto string, _ int) bool { return to != "x/a" || proto == "udp" }},
	{"should enforce policy based on Ports (endPort)", `
kind: NetworkPolicy
metadata: {name: range, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{ports: [{protocol: TCP, port: 80, endPort: 81}]}]`,
		func(from, to, proto string, port int) bool { return to != "x/a" || (proto == "tcp" && port <= 81) }},
	{"should enforce ingress policy allowing any port traffic to a server on a specific protocol", `
kind: NetworkPolicy
metadata: {name: any-tcp, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{ports: [{protocol: TCP}]}]`,
		func(from, to, proto string, _ int) bool { return to != "x/a" || proto == "tcp" }},
	{"should support denying of egress traffic on the client side (even if the server explicitly allows this traffic)", `
kind: NetworkPolicy
metadata: {name: deny-egress-x, namespace: x}
spec: {podSelector: {}, policyTypes: [Egress]}
---
kind: NetworkPolicy
metadata: {name: allow-ingress-y, namespace: "y"}
spec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {ns: x}}}]}]}`,
		func(from, to, _ string, _ int) bool {
			if ns(from) == "x" {
				return false
			}
			return ns(to) != "y" || ns(from) == "x"
		}},
}

// TestKernelE2ETruthTables sends real TCP and UDP packets between pod
// namespaces, over IPv4 and IPv6, for each upstream case, one policy set after
// the other on the same firewall (so every case also tests the update from
// the previous one).
func TestKernelE2ETruthTables(t *testing.T) {
	c := newCluster(t, false)
	syncOK(t, c.f, c.st.State, &model.Changes{Full: true})
	t.Run("no policies", func(t *testing.T) {
		c.check(t, false, func(string, string, string, int) bool { return true })
	})
	for _, tc := range e2eCases {
		t.Run(tc.name, func(t *testing.T) {
			c.setPolicies(t, tc.policies)
			for _, v6 := range []bool{false, true} {
				c.check(t, v6, tc.want)
			}
		})
	}
}

// TestKernelChangesWhileTrafficFlows adds, updates and deletes a policy and
// relabels a pod while a long-lived connection stays open, and checks that
// established connections survive and new ones follow the policy.
func TestKernelChangesWhileTrafficFlows(t *testing.T) {
	c := newCluster(t, false)
	syncOK(t, c.f, c.st.State, &model.Changes{Full: true})
	fromB := func(from, to, _ string, _ int) bool { return to != "x/a" || from == "x/b" }
	c.setPolicies(t, e2eCases[2].policies) // x/a only from x/b
	c.check(t, false, fromB)

	// Update: from x/c instead.
	c.setPolicies(t, strings.ReplaceAll(e2eCases[2].policies, "pod: b", "pod: c"))
	c.check(t, false, func(from, to, _ string, _ int) bool { return to != "x/a" || from == "x/c" })

	// Relabel x/b as c: it may now connect.
	next := c.st.Clone()
	k := model.PodKey{Namespace: "x", Name: "b"}
	relabeled := *next.Pods[k]
	relabeled.Labels = map[string]string{"pod": "c"}
	next.Pods[k] = &relabeled
	c.st = next
	ch := &model.Changes{}
	ch.Pods.Add(k)
	s := syncOK(t, c.f, c.st.State, ch)
	if s.ByType["newrule"] != 0 || s.ByType["newchain"] != 0 {
		t.Errorf("relabel wrote rules or chains: %v", s.ByType)
	}
	c.check(t, false, func(from, to, _ string, _ int) bool { return to != "x/a" || from == "x/c" || from == "x/b" })

	// Delete: everything flows again.
	c.setPolicies(t, "")
	c.check(t, false, func(string, string, string, int) bool { return true })
}

// TestKernelDefaultDeny checks that with DefaultDeny a pod that exists on the
// node but is not yet in the model is cut off, and reachable once it is.
func TestKernelDefaultDeny(t *testing.T) {
	c := newCluster(t, true)
	c.st.Nodes["node-a"] = &model.Node{Name: "node-a", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:1::/64")}}
	late := c.node.AddPod("x/late", netip.MustParseAddr("10.244.1.100"))
	late.Serve(t, "tcp", 80)
	syncOK(t, c.f, c.st.State, &model.Changes{Full: true})
	a := c.pods["x/a"]
	netnstest.RunProbes(t, []netnstest.ProbeCase{
		{From: a, To: late.IPs[0], ToName: "x/late", Protocol: "tcp", Port: 80, Want: false},
		{From: late, To: a.IPs[0], ToName: "x/a", Protocol: "tcp", Port: 80, Want: false},
		{From: a, To: c.pods["y/b"].IPs[0], ToName: "y/b", Protocol: "tcp", Port: 80, Want: true},
	})
	next := c.st.Clone()
	k := model.PodKey{Namespace: "x", Name: "late"}
	next.Pods[k] = c.modelPod("x", "late", late.IPs)
	c.st = next
	ch := &model.Changes{}
	ch.Pods.Add(k)
	syncOK(t, c.f, c.st.State, ch)
	netnstest.RunProbes(t, []netnstest.ProbeCase{
		{From: a, To: late.IPs[0], ToName: "x/late", Protocol: "tcp", Port: 80, Want: true},
		{From: late, To: a.IPs[0], ToName: "x/a", Protocol: "tcp", Port: 80, Want: true},
	})
}
