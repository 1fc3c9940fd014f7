package netpol

import (
	"fmt"
	"net/netip"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// policyPlan is what one policy contributes to the table regardless of pods:
// its chains and the shared sets they refer to. It is a pure function of the
// policy.
type policyPlan struct {
	pol    *model.Policy
	chains []*ruleset.Chain
	// uses are the shared sets the chains (and the namespace's dispatch
	// chains, for target) refer to, without duplicates.
	uses []*setSpec
	// target holds the pods the policy selects; nil when no chain of the
	// policy needs it (it has no rules in the directions it isolates).
	target *setSpec
}

type setElem struct {
	set string
	e   ruleset.Element
}

func idx(v6 bool) int {
	if v6 {
		return 1
	}
	return 0
}

func planPolicy(pol *model.Policy, fams families) *policyPlan {
	k := pol.Key()
	pp := &policyPlan{pol: pol}
	seen := map[string]bool{}
	use := func(s *setSpec) *setSpec {
		if !seen[s.key] {
			seen[s.key] = true
			pp.uses = append(pp.uses, s)
		}
		return s
	}
	for _, d := range []direction{ingress, egress} {
		isolates, rules := side(pol, d)
		if !isolates || len(rules) == 0 {
			continue
		}
		if pp.target == nil {
			pp.target = use(podsSpec(pol.Namespace, []model.Peer{{PodSelector: &pol.PodSelector}}, fams))
		}
		ch := &ruleset.Chain{Name: policyChain(d, k), Comment: fmt.Sprintf("netpol %s %s", k, d.long())}
		for _, r := range rules {
			ch.Rules = append(ch.Rules, ruleRules(d, pol.Namespace, r, fams, use)...)
		}
		pp.chains = append(pp.chains, ch)
	}
	return pp
}

// term is one half of a rule (peer or port) and the address family it binds
// the rule to (0 for either).
type term struct {
	m   ruleset.Match
	fam int
}

// ruleRules renders one policy rule: an accept rule per (peer term, port term)
// pair of the same family, for the families planned. use registers the shared sets it refers to.
//
// Named ports resolve on the destination pod. Their set holds the named ports
// of every pod; the other half of the rule already restricts the destination
// (the policy's target for ingress, the peer for egress), so the conjunction
// allows exactly the ports of the pods the rule is about.
func ruleRules(d direction, policyNS string, r model.PolicyRule, fams families, use func(*setSpec) *setSpec) []ruleset.Rule {
	src := d == ingress // the peer is the source of ingress traffic
	var peers []term
	if len(r.Peers) == 0 {
		peers = []term{{}}
	}
	var selPeers []model.Peer
	var cidrs []ruleset.Element
	for _, p := range r.Peers {
		if p.IPBlock != nil {
			for _, v6 := range []bool{false, true} {
				cidrs = append(cidrs, ruleset.PrefixRanges([]netip.Prefix{p.IPBlock.CIDR}, p.IPBlock.Except, v6)...)
			}
			continue
		}
		selPeers = append(selPeers, p)
	}
	if len(selPeers) > 0 {
		s := use(podsSpec(policyNS, selPeers, fams))
		for _, v6 := range fams.list() {
			peers = append(peers, term{ruleset.AddrIn{V6: v6, Src: src, Set: s.names[idx(v6)]}, famOf(v6)})
		}
	}
	for _, v6 := range fams.list() {
		var mine []ruleset.Element
		for _, e := range cidrs {
			if e.Addr.Is6() == v6 {
				mine = append(mine, e)
			}
		}
		if len(mine) == 0 {
			continue
		}
		s := use(cidrSpec(ruleset.MergeRanges(mine), v6))
		peers = append(peers, term{ruleset.AddrIn{V6: v6, Src: src, Set: s.names[idx(v6)]}, famOf(v6)})
	}
	var ports []term
	if len(r.Ports) == 0 {
		ports = []term{{}}
	}
	var named []model.PolicyPort
	for _, po := range r.Ports {
		switch {
		case po.Name != "":
			named = append(named, po)
		case po.Port == 0:
			ports = append(ports, term{ruleset.L4Proto{Proto: uint8(po.Protocol)}, 0})
		default:
			ports = append(ports, term{ruleset.DPort{Proto: uint8(po.Protocol), First: po.Port, Last: po.EndPort}, 0})
		}
	}
	if len(named) > 0 {
		s := use(portsSpec(named, fams))
		for _, v6 := range fams.list() {
			ports = append(ports, term{ruleset.DestPortIn{V6: v6, Set: s.names[idx(v6)]}, famOf(v6)})
		}
	}
	var out []ruleset.Rule
	for _, pe := range peers {
		for _, po := range ports {
			if pe.fam != 0 && po.fam != 0 && pe.fam != po.fam {
				continue
			}
			var r ruleset.Rule
			for _, m := range []ruleset.Match{pe.m, po.m} {
				if m != nil {
					r.Matches = append(r.Matches, m)
				}
			}
			r.Verdict = ruleset.Accept{}
			out = append(out, r)
		}
	}
	return out
}

func famOf(v6 bool) int {
	if v6 {
		return 6
	}
	return 4
}

// isolation returns the isolation-set elements of pod for this policy: the
// pod's addresses, in each direction the policy isolates, in the set of all
// isolated pods and in that of its namespace, if the pod is on this node and
// the policy selects it.
func (pp *policyPlan) isolation(pod *model.Pod, node string) []setElem {
	pol := pp.pol
	if pod.Node != node || !pol.Selects(pod) {
		return nil
	}
	var out []setElem
	for _, ip := range pod.IPs {
		v6 := ip.Is6()
		for _, d := range pp.isolates() {
			out = append(out, setElem{isolatedSet(d, v6), ruleset.Element{Addr: ip}},
				setElem{nsIsolatedSet(d, pod.Namespace, v6), ruleset.Element{Addr: ip}})
		}
	}
	return out
}

// side returns whether pol isolates its pods in direction d, and its rules
// for d.
func side(pol *model.Policy, d direction) (isolates bool, rules []model.PolicyRule) {
	if d == ingress {
		return pol.Ingress, pol.IngressRules
	}
	return pol.Egress, pol.EgressRules
}

// isolates lists the directions the policy isolates.
func (pp *policyPlan) isolates() []direction {
	var out []direction
	if pp.pol.Ingress {
		out = append(out, ingress)
	}
	if pp.pol.Egress {
		out = append(out, egress)
	}
	return out
}
