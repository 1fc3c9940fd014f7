package netpol

import (
	"fmt"
	"net/netip"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// policyPlan is what one policy contributes to the table regardless of pods:
// its chains and the definitions of its sets. It is a pure function of the
// policy.
type policyPlan struct {
	pol    *model.Policy
	chains []*ruleset.Chain
	sets   []ruleset.Set
	static []setElem // elements that do not depend on pods (ipBlock ranges)
	rules  []rulePlan
}

// rulePlan is one ingress or egress rule with the names of its pod-dependent sets.
type rulePlan struct {
	dir        direction
	selPeers   []model.Peer
	anyDest    bool // no peers or an ipBlock peer: named ports resolve on any pod
	named      []model.PolicyPort
	pod, port  [2]string // set names, [v4, v6]; "" when the rule needs none
	hasSelPeer bool
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

func planPolicy(pol *model.Policy) *policyPlan {
	k := pol.Key()
	pp := &policyPlan{pol: pol}
	for _, v6 := range []bool{false, true} {
		pp.sets = append(pp.sets, ruleset.Set{Name: targetSet(k, v6), Type: addrType(v6),
			Comment: fmt.Sprintf("netpol %s: local pods it selects", k)})
	}
	for _, d := range []direction{ingress, egress} {
		rules := pol.IngressRules
		isolates := pol.Ingress
		if d == egress {
			rules, isolates = pol.EgressRules, pol.Egress
		}
		if !isolates || len(rules) == 0 {
			continue
		}
		ch := &ruleset.Chain{Name: policyChain(d, k), Comment: fmt.Sprintf("netpol %s %s", k, d.long())}
		for i, r := range rules {
			rp := pp.planRule(d, i, r)
			pp.rules = append(pp.rules, rp)
			ch.Rules = append(ch.Rules, pp.ruleRules(d, i, r, rp)...)
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

func (pp *policyPlan) planRule(d direction, i int, r model.PolicyRule) rulePlan {
	k := pp.pol.Key()
	rp := rulePlan{dir: d, anyDest: len(r.Peers) == 0}
	for _, p := range r.Peers {
		if p.IPBlock != nil {
			rp.anyDest = true
			continue
		}
		rp.selPeers = append(rp.selPeers, p)
	}
	for _, po := range r.Ports {
		if po.Name != "" {
			rp.named = append(rp.named, po)
		}
	}
	for _, v6 := range []bool{false, true} {
		if len(rp.selPeers) > 0 {
			rp.pod[idx(v6)] = ruleSet(d, i, "pod", k, v6)
			pp.sets = append(pp.sets, ruleset.Set{Name: rp.pod[idx(v6)], Type: addrType(v6),
				Comment: fmt.Sprintf("netpol %s: %s[%d] pod peers", k, d.long(), i)})
		}
		if len(rp.named) > 0 {
			rp.port[idx(v6)] = ruleSet(d, i, "port", k, v6)
			t := ruleset.AddrProtoPort4
			if v6 {
				t = ruleset.AddrProtoPort6
			}
			pp.sets = append(pp.sets, ruleset.Set{Name: rp.port[idx(v6)], Type: t,
				Comment: fmt.Sprintf("netpol %s: %s[%d] named ports", k, d.long(), i)})
		}
	}
	return rp
}

// ruleRules renders one policy rule: an accept rule per (peer term, port term)
// pair of the same family.
func (pp *policyPlan) ruleRules(d direction, i int, r model.PolicyRule, rp rulePlan) []ruleset.Rule {
	k := pp.pol.Key()
	src := d == ingress // the peer is the source of ingress traffic
	var peers []term
	if len(r.Peers) == 0 {
		peers = []term{{}}
	}
	for _, v6 := range []bool{false, true} {
		if rp.pod[idx(v6)] != "" {
			peers = append(peers, term{ruleset.AddrIn{V6: v6, Src: src, Set: rp.pod[idx(v6)]}, famOf(v6)})
		}
	}
	var cidrs []ruleset.Element
	for _, p := range r.Peers {
		if p.IPBlock != nil {
			for _, v6 := range []bool{false, true} {
				cidrs = append(cidrs, ruleset.PrefixRanges([]netip.Prefix{p.IPBlock.CIDR}, p.IPBlock.Except, v6)...)
			}
		}
	}
	for _, v6 := range []bool{false, true} {
		var mine []ruleset.Element
		for _, e := range cidrs {
			if e.Addr.Is6() == v6 {
				mine = append(mine, e)
			}
		}
		if len(mine) == 0 {
			continue
		}
		name := ruleSet(d, i, "cidr", k, v6)
		pp.sets = append(pp.sets, ruleset.Set{Name: name, Type: addrType(v6), Interval: true,
			Comment: fmt.Sprintf("netpol %s: %s[%d] ipBlocks", k, d.long(), i)})
		for _, e := range ruleset.MergeRanges(mine) {
			pp.static = append(pp.static, setElem{name, e})
		}
		peers = append(peers, term{ruleset.AddrIn{V6: v6, Src: src, Set: name}, famOf(v6)})
	}
	var ports []term
	if len(r.Ports) == 0 {
		ports = []term{{}}
	}
	for _, po := range r.Ports {
		switch {
		case po.Name != "":
		case po.Port == 0:
			ports = append(ports, term{ruleset.L4Proto{Proto: uint8(po.Protocol)}, 0})
		default:
			ports = append(ports, term{ruleset.DPort{Proto: uint8(po.Protocol), First: po.Port, Last: po.EndPort}, 0})
		}
	}
	for _, v6 := range []bool{false, true} {
		if rp.port[idx(v6)] != "" {
			ports = append(ports, term{ruleset.DestPortIn{V6: v6, Set: rp.port[idx(v6)]}, famOf(v6)})
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

func addrType(v6 bool) ruleset.KeyType {
	if v6 {
		return ruleset.Addr6
	}
	return ruleset.Addr4
}

// contribute appends the elements pod brings to this policy's sets and to the
// isolation maps. ns is the pod's namespace object, nil if unknown.
func (pp *policyPlan) contribute(out []setElem, pod *model.Pod, ns *model.Namespace, node string) []setElem {
	pol := pp.pol
	k := pol.Key()
	local := pod.Node == node && pol.Selects(pod)
	for _, ip := range pod.IPs {
		v6 := ip.Is6()
		if local {
			out = append(out, setElem{targetSet(k, v6), ruleset.Element{Addr: ip}})
			if pol.Ingress {
				out = append(out, setElem{isolatedMap(ingress, v6), ruleset.Element{Addr: ip, Jump: nsChain(ingress, pod.Namespace)}})
			}
			if pol.Egress {
				out = append(out, setElem{isolatedMap(egress, v6), ruleset.Element{Addr: ip, Jump: nsChain(egress, pod.Namespace)}})
			}
		}
		for _, rp := range pp.rules {
			matched := rp.matches(pol.Namespace, pod, ns)
			if matched {
				out = append(out, setElem{rp.pod[idx(v6)], ruleset.Element{Addr: ip}})
			}
			// A port name resolves on the destination pod: the target for
			// ingress, the peer (or any pod, with no or ipBlock peers) for egress.
			if len(rp.named) == 0 || (rp.dir == ingress && !local) || (rp.dir == egress && !matched && !rp.anyDest) {
				continue
			}
			for _, po := range rp.named {
				if port, ok := pod.NamedPort(po.Name, po.Protocol); ok {
					out = append(out, setElem{rp.port[idx(v6)], ruleset.Element{Addr: ip, Proto: uint8(po.Protocol), Port: port}})
				}
			}
		}
	}
	return out
}

// matches reports whether one of the rule's selector peers selects pod.
func (rp *rulePlan) matches(policyNS string, pod *model.Pod, ns *model.Namespace) bool {
	for _, p := range rp.selPeers {
		if p.NamespaceSelector == nil {
			if pod.Namespace != policyNS {
				continue
			}
		} else {
			var labels map[string]string
			if ns != nil {
				labels = ns.Labels
			}
			if !p.NamespaceSelector.Matches(labels) {
				continue
			}
		}
		if p.PodSelector == nil || p.PodSelector.Matches(pod.Labels) {
			return true
		}
	}
	return false
}

// candidateNamespaces returns the namespaces whose pods may contribute to the
// policy, or nil with all=true when any pod may.
func (pp *policyPlan) candidateNamespaces(podNamespaces map[string]map[model.PodKey]*model.Pod, namespaces map[string]*model.Namespace) (nss map[string]bool, all bool) {
	nss = map[string]bool{pp.pol.Namespace: true}
	for _, rp := range pp.rules {
		if rp.dir == egress && len(rp.named) > 0 && rp.anyDest {
			return nil, true
		}
		for _, p := range rp.selPeers {
			if p.NamespaceSelector == nil {
				continue
			}
			if p.NamespaceSelector.Empty() {
				return nil, true
			}
			for name := range podNamespaces {
				var labels map[string]string
				if ns := namespaces[name]; ns != nil {
					labels = ns.Labels
				}
				if p.NamespaceSelector.Matches(labels) {
					nss[name] = true
				}
			}
		}
	}
	return nss, false
}
