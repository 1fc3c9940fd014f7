package egress

import (
	"context"
	"flag"
	"fmt"
	"github.com/nfrouter/nfrouter/integration/golden"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func node(name string, addrsAndCIDRs ...string) *model.Node {
	n := &model.Node{Name: name}
	for _, s := range addrsAndCIDRs {
		switch {
		case strings.HasPrefix(s, "ext:"):
			n.ExternalIPs = append(n.ExternalIPs, netip.MustParseAddr(s[4:]))
		case strings.Contains(s, "/"):
			n.PodCIDRs = append(n.PodCIDRs, netip.MustParsePrefix(s))
		default:
			n.InternalIPs = append(n.InternalIPs, netip.MustParseAddr(s))
		}
	}
	return n
}

func state(nodes ...*model.Node) *model.State {
	st := &model.State{}
	for _, n := range nodes {
		st.Nodes = st.Nodes.With(n.Name, n)
	}
	return st
}

func plan(st *model.State) (*ruleset.Table, *Planner) {
	tab := ruleset.NewTable("inet", "nfrouter")
	p := New(tab)
	p.Plan(context.Background(), st, &model.Changes{Full: true})
	return tab, p
}

// TestGolden plans node shapes from scratch and compares the nft text with
// testdata/*.golden; -update rewrites them.
func TestGolden(t *testing.T) {
	cases := []struct {
		name  string
		nodes []*model.Node
	}{
		{"no-pod-cidrs", []*model.Node{node("node-a", "192.168.1.10")}},
		{"ipv4", []*model.Node{
			node("node-a", "192.168.1.10", "ext:203.0.113.10", "10.244.0.0/24"),
			node("node-b", "192.168.1.11", "10.244.1.0/24"),
			node("node-c", "192.168.2.12", "10.245.0.0/24"),
		}},
		{"dual-stack", []*model.Node{
			node("node-a", "192.168.1.10", "fd00:1::10", "10.244.0.0/24", "fd00:244::/64"),
			node("node-b", "192.168.1.11", "fd00:1::11", "10.244.1.0/24", "fd00:244:0:1::/64"),
		}},
		{"ipv6-only-pods", []*model.Node{node("node-a", "192.168.1.10", "fd00:1::10", "fd00:244::/64")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab, _ := plan(state(tc.nodes...))
			got := ruleset.Text(tab)
			golden.Compare(t, filepath.Join("testdata", tc.name+".golden"), got, *update)
		})
	}
}

// TestNodeChurnTouchesOnlyElements checks that nodes coming and going edit
// set elements and leave the chain alone while the families stay.
func TestNodeChurnTouchesOnlyElements(t *testing.T) {
	a := node("node-a", "192.168.1.10", "10.244.0.0/24")
	b := node("node-b", "192.168.1.11", "10.244.1.0/24")
	tab, p := plan(state(a))
	tab.TakeDirty()
	for _, step := range []struct {
		name string
		st   *model.State
	}{{"node-b joins", state(a, b)}, {"node-b leaves", state(a)}} {
		ch := &model.Changes{}
		ch.Nodes.Add("node-b")
		p.Plan(context.Background(), step.st, ch)
		chains, sets, elems := tab.TakeDirty()
		want := []string{NodeIPsSet(false), PodCIDRsSet(false)}
		if len(chains) != 0 || !slices.Equal(sets, want) || elems[NodeIPsSet(false)] == nil {
			t.Errorf("%s: changed chains %v, sets %v (node IPs element-wise: %v), want no chain, sets %v element-wise",
				step.name, chains, sets, elems[NodeIPsSet(false)] != nil, want)
		}
	}
	// An unrelated node update (an annotation) costs nothing.
	a2 := *a
	a2.Annotations = map[string]string{"kube-router.io/node.asn": "64513"}
	ch := &model.Changes{}
	ch.Nodes.Add("node-a")
	p.Plan(context.Background(), state(&a2), ch)
	if chains, sets, _ := tab.TakeDirty(); len(chains)+len(sets) != 0 {
		t.Errorf("annotation change: changed chains %v and sets %v, want none", chains, sets)
	}
}

// TestAnyStateFollowsAnyOther walks random node sets, planning each from the
// changed node names only, and checks that the table always equals a fresh
// plan of the same state.
func TestAnyStateFollowsAnyOther(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var universe []*model.Node
	for i := range 5 {
		universe = append(universe,
			node(fmt.Sprintf("node-%d", i), fmt.Sprintf("192.168.1.%d", i), fmt.Sprintf("10.244.%d.0/24", i)),
			node(fmt.Sprintf("node-%d", i), fmt.Sprintf("192.168.1.%d", i), fmt.Sprintf("fd00:1::%d", i),
				fmt.Sprintf("10.244.%d.0/24", i), fmt.Sprintf("fd00:244:0:%d::/64", i)),
			node(fmt.Sprintf("node-%d", i), fmt.Sprintf("fd00:1::%d", i), fmt.Sprintf("ext:203.0.113.%d", i), fmt.Sprintf("fd00:244:0:%d::/64", i)),
			node(fmt.Sprintf("node-%d", i), fmt.Sprintf("192.168.1.%d", i)))
	}
	tab := ruleset.NewTable("inet", "nfrouter")
	p := New(tab)
	prev := state()
	p.Plan(context.Background(), prev, &model.Changes{Full: true})
	for step := range 400 {
		next := state()
		for name, n := range prev.Nodes.All() {
			next.Nodes = next.Nodes.With(name, n)
		}
		ch := &model.Changes{}
		for range 1 + rng.IntN(2) {
			n := universe[rng.IntN(len(universe))]
			if next.Nodes.Get(n.Name) == n {
				next.Nodes = next.Nodes.Without(n.Name)
			} else {
				next.Nodes = next.Nodes.With(n.Name, n)
			}
			ch.Nodes.Add(n.Name)
		}
		p.Plan(context.Background(), next, ch)
		want, _ := plan(next)
		if got, w := ruleset.Text(tab), ruleset.Text(want); got != w {
			t.Fatalf("step %d: incremental plan differs from a fresh one:\n--- incremental\n%s\n--- fresh\n%s", step, got, w)
		}
		prev = next
	}
}
