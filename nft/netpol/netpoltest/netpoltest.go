// Package netpoltest holds NetworkPolicy truth tables for tests: upstream's
// e2e cases on upstream's cluster model, as data. The kernel tests of package
// nft send real packets for every probe; cmd/nfrouter's tests ask `nfrouter
// explain` the same probes. Both read the cases from here, so the two can
// never check different tables.
package netpoltest

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/nfrouter/nfrouter/model"
)

// The upstream e2e model: namespaces x, y, z with pods a, b, c each, every
// pod serving TCP 80, 81, 82 and UDP 80 on ports named serve-80-tcp, ….
var (
	Namespaces = []string{"x", "y", "z"}
	PodNames   = []string{"a", "b", "c"}
	ProbePorts = []Port{{"tcp", 80}, {"tcp", 81}, {"tcp", 82}, {"udp", 80}}
)

// Port is a probed port: its protocol in lower case, as netnstest names it.
type Port struct {
	Proto string
	Port  int
}

// Protocol is the port's protocol in the model.
func (p Port) Protocol() model.Protocol {
	return map[string]model.Protocol{"tcp": model.TCP, "udp": model.UDP, "sctp": model.SCTP}[p.Proto]
}

// Pods lists the pods as "namespace/name", x/a first.
func Pods() []string {
	var out []string
	for _, ns := range Namespaces {
		for _, name := range PodNames {
			out = append(out, ns+"/"+name)
		}
	}
	return out
}

// PodIPs returns the addresses of pod "namespace/name": the n-th pod in
// Pods order has 10.244.1.n and fd00:1::n (the cases' ipBlocks name them).
func PodIPs(pod string) []netip.Addr {
	for i, p := range Pods() {
		if p == pod {
			n := i + 1
			return []netip.Addr{netip.AddrFrom4([4]byte{10, 244, 1, byte(n)}), netip.MustParseAddr(fmt.Sprintf("fd00:1::%d", n))}
		}
	}
	panic("netpoltest: no pod " + pod)
}

// Namespace returns namespace ns as the cases' selectors expect it.
func Namespace(ns string) *model.Namespace {
	return &model.Namespace{Name: ns, Labels: map[string]string{"ns": ns, "kubernetes.io/metadata.name": ns}}
}

// Pod returns pod "namespace/name" of the model, running on node.
func Pod(pod, node string) *model.Pod {
	ns, name, _ := strings.Cut(pod, "/")
	mp := &model.Pod{Namespace: ns, Name: name, Node: node, IPs: PodIPs(pod), Labels: map[string]string{"pod": name}}
	for _, pp := range ProbePorts {
		mp.Ports = append(mp.Ports, model.ContainerPort{Name: fmt.Sprintf("serve-%d-%s", pp.Port, pp.Proto),
			Protocol: pp.Protocol(), Port: uint16(pp.Port)})
	}
	return mp
}

// NS returns the namespace of pod "namespace/name".
func NS(pod string) string { return strings.Split(pod, "/")[0] }

// Case is one truth table: the policies, as YAML, and who may then connect
// to whom on which port.
type Case struct {
	Name     string
	Policies string
	Want     func(from, to, proto string, port int) bool
}

// E2ECases are upstream's test/e2e/network/netpol cases, transcribed: the
// policies (in x unless said) and who may connect to whom on which port.
var E2ECases = []Case{
	{"should support a 'default-deny-ingress' policy", `
kind: NetworkPolicy
metadata: {name: deny-ingress, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress]}`,
		func(from, to, _ string, _ int) bool { return NS(to) != "x" }},
	{"should support a 'default-deny-all' policy", `
kind: NetworkPolicy
metadata: {name: deny-all, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}`,
		func(from, to, _ string, _ int) bool { return NS(to) != "x" && NS(from) != "x" }},
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
		func(from, to, _ string, _ int) bool { return to != "x/a" || NS(from) == "y" }},
	{"should enforce policy based on PodSelector or NamespaceSelector", `
kind: NetworkPolicy
metadata: {name: or, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{namespaceSelector: {matchExpressions: [{key: ns, operator: NotIn, values: [x]}]}}, {podSelector: {matchLabels: {pod: b}}}]}]`,
		func(from, to, _ string, _ int) bool { return to != "x/a" || NS(from) != "x" || from == "x/b" }},
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
			return to != "x/a" || (NS(from) == "y" && proto == "tcp" && port == 81)
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
			if NS(to) != "x" {
				return true
			}
			return (to == "x/a" && NS(from) == "y" && proto == "tcp" && port == 80) || (NS(from) == "z" && proto == "tcp" && port == 81)
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
		func(from, to, proto string, port int) bool { return NS(to) != "x" || (proto == "tcp" && port == 81) }},
	{"should allow egress access on one named port", `
kind: NetworkPolicy
metadata: {name: named-egress, namespace: x}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{ports: [{protocol: UDP, port: serve-80-udp}]}]`,
		func(from, to, proto string, port int) bool { return NS(from) != "x" || (proto == "udp" && port == 80) }},
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
			if from == "x/a" && NS(to) != "y" {
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
			if NS(from) == "x" {
				return false
			}
			return NS(to) != "y" || NS(from) == "x"
		}},
}
