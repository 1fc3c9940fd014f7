package nft

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
)

// genCluster makes a synthetic cluster: namespaces with pods labelled
// app=app0..app9 (each declaring a named port), and per namespace policies
// that mix pod selectors, namespace selectors, ipBlocks, numbered and named
// ports. All pods are on node-a, the worst case for the node.
func genCluster(namespaces, podsPerNS, policiesPerNS int) fixture.State {
	s := fixture.New()
	s.Nodes = s.Nodes.With("node-a", &model.Node{Name: "node-a", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	n := 0
	for i := range namespaces {
		name := fmt.Sprintf("ns%d", i)
		s.Namespaces = s.Namespaces.With(name, &model.Namespace{Name: name, Labels: map[string]string{"team": fmt.Sprintf("t%d", i%10)}})
		for j := range podsPerNS {
			n++
			s.Pods = s.Pods.With(model.PodKey{Namespace: name, Name: fmt.Sprintf("p%d", j)}, genPod(name, fmt.Sprintf("p%d", j), j%10, n))
		}
		for j := range policiesPerNS {
			app := fmt.Sprintf("app%d", j%10)
			pol := &model.Policy{Namespace: name, Name: fmt.Sprintf("np%d", j), Ingress: true,
				PodSelector: model.Selector{Requirements: []model.Requirement{{Key: "app", Op: model.OpIn, Values: []string{app}}}}}
			peerApp := model.Selector{Requirements: []model.Requirement{{Key: "app", Op: model.OpIn, Values: []string{fmt.Sprintf("app%d", (j+1)%10)}}}}
			team := model.Selector{Requirements: []model.Requirement{{Key: "team", Op: model.OpIn, Values: []string{fmt.Sprintf("t%d", j%10)}}}}
			pol.IngressRules = []model.PolicyRule{
				{Peers: []model.Peer{{PodSelector: &peerApp}}, Ports: []model.PolicyPort{{Protocol: model.TCP, Port: 8080}}},
				{Peers: []model.Peer{{NamespaceSelector: &team, PodSelector: &peerApp}}, Ports: []model.PolicyPort{{Protocol: model.TCP, Name: "http"}}},
			}
			if j%5 == 0 {
				pol.Egress = true
				pol.EgressRules = []model.PolicyRule{
					{Peers: []model.Peer{{IPBlock: &model.IPBlock{CIDR: netip.MustParsePrefix("10.0.0.0/8"),
						Except: []netip.Prefix{netip.MustParsePrefix("10.255.0.0/16")}}}}},
					{Ports: []model.PolicyPort{{Protocol: model.UDP, Port: 53}}},
				}
			}
			s.Policies = s.Policies.With(pol.Key(), pol)
		}
	}
	return s
}

func genPod(ns, name string, app, n int) *model.Pod {
	ip := netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)})
	return &model.Pod{Namespace: ns, Name: name, Node: "node-a", IPs: []netip.Addr{ip},
		Labels: map[string]string{"app": fmt.Sprintf("app%d", app)},
		Ports:  []model.ContainerPort{{Name: "http", Protocol: model.TCP, Port: 8080}}}
}

// churn replaces pod i of namespace ns0 by a new pod with a new IP and the same
// labels, as a Deployment rollout does, in two syncs (add, delete), and a
// third that renames the replacement to the old key. check gets the stats
// and the duration of each sync (without building the states, which copies
// every pod).
func churn(t testing.TB, f *Backend, st *fixture.State, i int, check func(Stats, time.Duration)) {
	next := st.Clone()
	old := model.PodKey{Namespace: "ns0", Name: fmt.Sprintf("p%d", i)}
	repl := model.PodKey{Namespace: "ns0", Name: fmt.Sprintf("p%d-new%d", i, next.Generation)}
	next.Pods = next.Pods.With(repl, genPod("ns0", repl.Name, i%10, 1<<20+int(next.Generation)))
	ch := &model.Changes{}
	ch.Pods.Add(repl)
	timed := func(st *model.State, ch *model.Changes) {
		start := time.Now()
		s := syncOK(t, f, st, ch)
		check(s, time.Since(start))
	}
	timed(next.State, ch)
	next2 := next.Clone()
	next2.Pods = next2.Pods.Without(old)
	ch = &model.Changes{}
	ch.Pods.Add(old)
	timed(next2.State, ch)
	// Keep the replaced pod under the old key so that the next round can
	// replace it again.
	next3 := next2.Clone()
	next3.Pods = next3.Pods.With(old, next2.Pods.Get(repl))
	next3.Pods = next3.Pods.Without(repl)
	*st = next3
	ch = &model.Changes{}
	ch.Pods.Add(old)
	ch.Pods.Add(repl)
	timed(st.State, ch)
}

// TestKernelPodChurnIsElementOnly replaces pods many times and checks that
// every transaction held set and map element operations only, in a number
// that does not depend on the cluster, and that syncs without changes send
// nothing.
func TestKernelPodChurnIsElementOnly(t *testing.T) {
	kerneltest.RequireRoot(t)
	st := genCluster(10, 50, 10)
	ns := kerneltest.NewNetNS(t)
	f := newFirewallIn(t, ns, true)
	syncOK(t, f, st.State, &model.Changes{Full: true})
	maxMsgs := 0
	for i := range 50 {
		churn(t, f, &st, i%50, func(s Stats, _ time.Duration) {
			for typ := range s.ByType {
				if typ != "newsetelem" && typ != "delsetelem" {
					t.Errorf("pod churn sent %s messages: %v", typ, s.ByType)
				}
			}
			maxMsgs = max(maxMsgs, s.Messages)
		})
	}
	// A pod's elements go to each set of a policy that selects or names it
	// (here at most a dozen: its own policy, two peer rules, the maps), so the
	// count depends on the pod's policies, never on the number of pods.
	if maxMsgs > 32 {
		t.Errorf("a pod change took up to %d messages; want a small constant", maxMsgs)
	}
	if s := syncOK(t, f, st.State, &model.Changes{}); s.Messages != 0 {
		t.Errorf("no-change sync sent %d messages", s.Messages)
	}
	if s := syncOK(t, f, st.State, &model.Changes{Full: true}); s.Messages != 0 {
		t.Errorf("full sync after churn found drift: %v", s.ByType)
	}
	t.Logf("largest pod-change transaction: %d messages", maxMsgs)
}

// BenchmarkColdStart programs 5,000 pods, 1,000 policies and 100 namespaces
// into an empty namespace.
func BenchmarkColdStart(b *testing.B) {
	kerneltest.RequireRoot(b)
	st := genCluster(100, 50, 10)
	var last Stats
	for b.Loop() {
		b.StopTimer()
		ns := kerneltest.NewNetNS(b)
		f := newFirewallIn(b, ns, false)
		b.StartTimer()
		last = syncOK(b, f, st.State, &model.Changes{Full: true})
	}
	b.ReportMetric(float64(last.Messages), "msgs/op")
	b.ReportMetric(float64(last.Bytes), "netlink-bytes/op")
}

// BenchmarkPodAddDelete measures one pod coming or going (one sync each) at
// 5,000 pods, 1,000 policies and 100 namespaces.
func BenchmarkPodAddDelete(b *testing.B) {
	kerneltest.RequireRoot(b)
	st := genCluster(100, 50, 10)
	ns := kerneltest.NewNetNS(b)
	f := newFirewallIn(b, ns, false)
	syncOK(b, f, st.State, &model.Changes{Full: true})
	msgs, bytes, syncs := 0, 0, 0
	var took, slowest time.Duration
	i := 0
	for b.Loop() {
		churn(b, f, &st, i%50, func(s Stats, d time.Duration) {
			msgs += s.Messages
			bytes += s.Bytes
			syncs++
			took += d
			slowest = max(slowest, d)
		})
		i++
	}
	// ns/op also counts building three states per op (copies of 5,000
	// pods); µs/sync is the time from Sync called to kernel programmed.
	b.ReportMetric(float64(took.Microseconds())/float64(syncs), "µs/sync")
	b.ReportMetric(float64(slowest.Microseconds()), "max-µs/sync")
	b.ReportMetric(float64(msgs)/float64(syncs), "msgs/sync")
	b.ReportMetric(float64(bytes)/float64(syncs), "netlink-bytes/sync")
}
