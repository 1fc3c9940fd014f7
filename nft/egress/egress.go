// Package egress plans pod egress masquerading (--enable-pod-egress), as
// kube-router's router does with an iptables rule and two ipsets: pod
// traffic leaving the cluster's pod networks, and not going to a node, is
// masqueraded to the address of the interface it leaves by.
//
//	set egress-pod-cidrs-v4   the pod CIDRs of every Node object (interval)
//	set egress-node-ips-v4    every node's internal and external addresses
//	chain egress-postrouting  (nat postrouting, srcnat)
//	  ip saddr @egress-pod-cidrs-v4 ip daddr != @egress-pod-cidrs-v4 ip daddr != @egress-node-ips-v4 masquerade
//
// The same for IPv6, for each family some node has a pod CIDR of. The planner
// is pure: it writes desired objects into a ruleset.Table and implements the
// nft.Part method set. A node coming, going or changing costs set elements;
// a family coming or going rewrites the chain.
package egress

import (
	"context"
	"maps"
	"net/netip"
	"slices"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Object names.
const (
	ChainPostrouting = "egress-postrouting"
)

// PodCIDRsSet and NodeIPsSet name the sets of a family.
func PodCIDRsSet(v6 bool) string { return "egress-pod-cidrs-" + fam(v6) }
func NodeIPsSet(v6 bool) string  { return "egress-node-ips-" + fam(v6) }

// Planner is the pod egress part of nfrouter's table.
type Planner struct {
	t *ruleset.Table
	// nodes are the nodes as last planned.
	nodes map[string]*model.Node
	// cidrs counts the pod CIDRs of each family (0 IPv4, 1 IPv6) over nodes.
	cidrs [2]int
	// fams are the families whose objects are in the table.
	fams [2]bool
}

// New returns the pod egress planner writing into t; it plans nothing until
// the first Plan.
func New(t *ruleset.Table) *Planner {
	return &Planner{t: t, nodes: map[string]*model.Node{}}
}

// Name names the part in logs.
func (p *Planner) Name() string { return "pod-egress" }

// Kinds are the model kinds the planner reads: nodes.
func (p *Planner) Kinds() model.Kinds { return model.KindNodes }

// Plan brings the part's objects in line with the nodes of state; changes
// names the changed nodes, or is Full.
func (p *Planner) Plan(_ context.Context, state *model.State, changes *model.Changes) {
	var cidrsChanged [2]bool
	for _, name := range p.candidates(state, changes) {
		old, cur := p.nodes[name], state.Nodes.Get(name)
		if old.Equal(cur) {
			continue
		}
		p.replaceIPs(p.nodeIPs(old), p.nodeIPs(cur))
		if !slices.Equal(podCIDRs(old), podCIDRs(cur)) {
			for _, pfx := range podCIDRs(old) {
				p.cidrs[fam6(pfx.Addr())]--
				cidrsChanged[fam6(pfx.Addr())] = true
			}
			for _, pfx := range podCIDRs(cur) {
				p.cidrs[fam6(pfx.Addr())]++
				cidrsChanged[fam6(pfx.Addr())] = true
			}
		}
		if cur == nil {
			delete(p.nodes, name)
		} else {
			p.nodes[name] = cur
		}
	}
	if fams := [2]bool{p.cidrs[0] > 0, p.cidrs[1] > 0}; fams != p.fams {
		// A family comes or goes: its objects appear or vanish and the
		// chain changes; plan everything afresh.
		p.install(fams)
		for _, name := range slices.Sorted(maps.Keys(p.nodes)) {
			p.replaceIPs(nil, p.nodeIPs(p.nodes[name]))
		}
		cidrsChanged = fams
	}
	for i, v6 := range []bool{false, true} {
		if cidrsChanged[i] && p.fams[i] {
			p.planPodCIDRs(v6)
		}
	}
}

// candidates are the nodes that may have changed.
func (p *Planner) candidates(state *model.State, changes *model.Changes) []string {
	if changes != nil && !changes.Full {
		return slices.Sorted(maps.Keys(changes.Nodes))
	}
	names := map[string]struct{}{}
	for name := range state.Nodes.All() {
		names[name] = struct{}{}
	}
	for name := range p.nodes {
		names[name] = struct{}{}
	}
	return slices.Sorted(maps.Keys(names))
}

// nodeIPs returns the addresses of n that belong in the node-IP sets of the
// families in use, sorted and without duplicates.
func (p *Planner) nodeIPs(n *model.Node) []netip.Addr {
	if n == nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range slices.Concat(n.InternalIPs, n.ExternalIPs) {
		if p.fams[fam6(a)] {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// replaceIPs swaps one node's addresses old for cur in the node-IP sets,
// touching only those that differ (elements are counted per node, so nodes
// sharing an address share its element).
func (p *Planner) replaceIPs(old, cur []netip.Addr) {
	for _, a := range old {
		if _, found := slices.BinarySearchFunc(cur, a, netip.Addr.Compare); !found {
			p.t.RemoveElement(NodeIPsSet(a.Is6()), ruleset.Element{Addr: a})
		}
	}
	for _, a := range cur {
		if _, found := slices.BinarySearchFunc(old, a, netip.Addr.Compare); !found {
			p.t.AddElement(NodeIPsSet(a.Is6()), ruleset.Element{Addr: a})
		}
	}
}

// planPodCIDRs rewrites the pod-CIDR set of a family from every node's pod
// CIDRs.
func (p *Planner) planPodCIDRs(v6 bool) {
	p.t.ReplaceElements(PodCIDRsSet(v6), ruleset.PrefixRanges(model.PodCIDRs(maps.All(p.nodes)), nil, v6))
}

// install replaces the part's objects with empty sets and the chain of fams
// (nothing when fams is empty).
func (p *Planner) install(fams [2]bool) {
	for _, v6 := range []bool{false, true} {
		p.t.DeleteSet(PodCIDRsSet(v6))
		p.t.DeleteSet(NodeIPsSet(v6))
	}
	p.fams = fams
	var rules []ruleset.Rule
	for i, v6 := range []bool{false, true} {
		if !fams[i] {
			continue
		}
		p.t.PutSet(ruleset.Set{Name: PodCIDRsSet(v6), Type: ruleset.AddrKey(v6), Interval: true, Comment: "pod CIDRs of all nodes"})
		p.t.PutSet(ruleset.Set{Name: NodeIPsSet(v6), Type: ruleset.AddrKey(v6), Comment: "addresses of all nodes"})
		rules = append(rules, ruleset.Rule{Matches: []ruleset.Match{
			ruleset.AddrIn{V6: v6, Src: true, Set: PodCIDRsSet(v6)},
			ruleset.AddrIn{V6: v6, Not: true, Set: PodCIDRsSet(v6)},
			ruleset.AddrIn{V6: v6, Not: true, Set: NodeIPsSet(v6)},
		}, Verdict: ruleset.Masquerade{}})
	}
	if len(rules) == 0 {
		p.t.DeleteChain(ChainPostrouting)
		return
	}
	p.t.PutChain(&ruleset.Chain{Name: ChainPostrouting, Comment: "masquerade pod traffic leaving the cluster (--enable-pod-egress)",
		Base: &ruleset.Hook{Hook: "postrouting", Type: "nat", Priority: 100}, Rules: rules})
}

func podCIDRs(n *model.Node) []netip.Prefix {
	if n == nil {
		return nil
	}
	return n.PodCIDRs
}

func fam(v6 bool) string {
	if v6 {
		return "v6"
	}
	return "v4"
}

// fam6 is the index of a's family in per-family arrays: 0 IPv4, 1 IPv6.
func fam6(a netip.Addr) int {
	if a.Is6() {
		return 1
	}
	return 0
}
