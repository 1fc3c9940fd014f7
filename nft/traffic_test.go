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
	"github.com/nfrouter/nfrouter/nft/netpol/netpoltest"
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

var probePorts = netpoltest.ProbePorts

func newCluster(t *testing.T, defaultDeny bool) *cluster {
	node := netnstest.NewNode(t)
	c := &cluster{node: node, pods: map[string]*netnstest.Pod{}, st: fixture.New()}
	c.f = newFirewallIn(t, node.NS, defaultDeny)
	for _, ns := range netpoltest.Namespaces {
		c.st.Namespaces = c.st.Namespaces.With(ns, netpoltest.Namespace(ns))
	}
	for _, key := range netpoltest.Pods() {
		p := node.AddPod(key, netpoltest.PodIPs(key)...)
		for _, pp := range probePorts {
			p.Serve(t, pp.Proto, pp.Port)
		}
		c.pods[key] = p
		c.names = append(c.names, key)
		mp := netpoltest.Pod(key, "node-a")
		c.st.Pods = c.st.Pods.With(mp.Key(), mp)
	}
	return c
}

func (c *cluster) modelPod(ns, name string, ips []netip.Addr) *model.Pod {
	mp := &model.Pod{Namespace: ns, Name: name, Node: "node-a", IPs: ips, Labels: map[string]string{"pod": name}}
	for _, pp := range probePorts {
		mp.Ports = append(mp.Ports, model.ContainerPort{Name: fmt.Sprintf("serve-%d-%s", pp.Port, pp.Proto),
			Protocol: pp.Protocol(), Port: uint16(pp.Port)})
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
	for k := range next.Policies.All() {
		next.Policies = next.Policies.Without(k)
		ch.Policies.Add(k)
	}
	if err := next.Apply([]byte(yaml)); err != nil {
		t.Fatal(err)
	}
	for k := range next.Policies.All() {
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
				w := want(from, to, pp.Proto, pp.Port)
				cases = append(cases, netnstest.ProbeCase{From: c.pods[from], To: dst, ToName: to, Protocol: pp.Proto, Port: pp.Port, Want: w})
				c.checkJudge(t, from, to, ruleset.Packet{Src: src, Dst: dst, Proto: protoNumber[pp.Proto], DPort: uint16(pp.Port)}, w)
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
	for _, tc := range netpoltest.E2ECases {
		t.Run(tc.Name, func(t *testing.T) {
			c.setPolicies(t, tc.Policies)
			for _, v6 := range []bool{false, true} {
				c.check(t, v6, tc.Want)
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
	c.setPolicies(t, netpoltest.E2ECases[2].Policies) // x/a only from x/b
	c.check(t, false, fromB)

	// Update: from x/c instead.
	c.setPolicies(t, strings.ReplaceAll(netpoltest.E2ECases[2].Policies, "pod: b", "pod: c"))
	c.check(t, false, func(from, to, _ string, _ int) bool { return to != "x/a" || from == "x/c" })

	// Relabel x/b as c: it may now connect.
	next := c.st.Clone()
	k := model.PodKey{Namespace: "x", Name: "b"}
	relabeled := *next.Pods.Get(k)
	relabeled.Labels = map[string]string{"pod": "c"}
	next.Pods = next.Pods.With(k, &relabeled)
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
	c.st.Nodes = c.st.Nodes.With("node-a", &model.Node{Name: "node-a", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:1::/64")}})
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
	next.Pods = next.Pods.With(k, c.modelPod("x", "late", late.IPs))
	c.st = next
	ch := &model.Changes{}
	ch.Pods.Add(k)
	syncOK(t, c.f, c.st.State, ch)
	netnstest.RunProbes(t, []netnstest.ProbeCase{
		{From: a, To: late.IPs[0], ToName: "x/late", Protocol: "tcp", Port: 80, Want: true},
		{From: late, To: a.IPs[0], ToName: "x/a", Protocol: "tcp", Port: 80, Want: true},
	})
}
