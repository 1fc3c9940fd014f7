package netpol

import (
	"fmt"
	"maps"
	"slices"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Config says what to plan for.
type Config struct {
	// NodeName is the node whose pods the firewall protects.
	NodeName string
	// DefaultDeny drops traffic of addresses in the node's pod CIDRs that are not
	// pods the firewall knows yet.
	DefaultDeny bool
}

// Planner keeps the firewall's objects in a ruleset.Table up to date with the
// model. Update does work proportional to what changed. A Planner is not safe
// for concurrent use.
type Planner struct {
	cfg Config
	t   *ruleset.Table

	// What the table currently reflects.
	pods       map[model.PodKey]*model.Pod
	byNS       map[string]map[model.PodKey]*model.Pod
	namespaces map[string]*model.Namespace
	node       *model.Node
	plans      map[model.PolicyKey]*policyPlan

	// contrib holds the elements each pod brought, per policy; local the
	// elements of the default-deny local-pod sets.
	contrib map[model.PodKey]map[model.PolicyKey][]setElem
	local   map[model.PodKey][]setElem
}

// New returns a planner that writes into t and installs the objects every
// firewall has.
func New(t *ruleset.Table, cfg Config) *Planner {
	p := &Planner{cfg: cfg, t: t,
		pods: map[model.PodKey]*model.Pod{}, byNS: map[string]map[model.PodKey]*model.Pod{},
		namespaces: map[string]*model.Namespace{}, plans: map[model.PolicyKey]*policyPlan{},
		contrib: map[model.PodKey]map[model.PolicyKey][]setElem{}, local: map[model.PodKey][]setElem{}}
	p.installBase()
	return p
}

func (p *Planner) installBase() {
	t := p.t
	for _, v6 := range []bool{false, true} {
		for _, d := range []direction{ingress, egress} {
			t.PutSet(ruleset.Set{Name: isolatedMap(d, v6), Type: addrType(v6), Verdict: true,
				Comment: "local pods isolated for " + d.long() + ": jump to their namespace's policies"})
		}
		if p.cfg.DefaultDeny {
			t.PutSet(ruleset.Set{Name: localCIDRs(v6), Type: addrType(v6), Interval: true, Comment: "pod CIDRs of this node"})
			t.PutSet(ruleset.Set{Name: localPods(v6), Type: addrType(v6), Comment: "local pods the firewall has programmed"})
		}
	}
	t.PutChain(&ruleset.Chain{Name: ChainDeny, Comment: "log (nflog group 100) and drop what no policy allows",
		Rules: []ruleset.Rule{{Matches: []ruleset.Match{ruleset.LogLimited{Group: NFLogGroup}}}, {Verdict: ruleset.Drop{}}}})
	for _, d := range []direction{egress, ingress} {
		c := &ruleset.Chain{Name: ChainEgress, Comment: "egress policies of local pods",
			Base: &ruleset.Hook{Hook: "forward", Type: "filter", Priority: -1}}
		if d == ingress {
			c = &ruleset.Chain{Name: ChainIngress, Comment: "ingress policies of local pods",
				Base: &ruleset.Hook{Hook: "forward", Type: "filter"}}
		}
		c.Rules = append(c.Rules, ruleset.Rule{Matches: []ruleset.Match{ruleset.CtEstablished{}}, Verdict: ruleset.Accept{}})
		src := d == egress
		for _, v6 := range []bool{false, true} {
			c.Rules = append(c.Rules, ruleset.Rule{Verdict: ruleset.AddrVmap{V6: v6, Src: src, Map: isolatedMap(d, v6)}})
		}
		if p.cfg.DefaultDeny {
			for _, v6 := range []bool{false, true} {
				c.Rules = append(c.Rules, ruleset.Rule{Matches: []ruleset.Match{
					ruleset.AddrIn{V6: v6, Src: src, Set: localCIDRs(v6)},
					ruleset.AddrIn{V6: v6, Src: src, Not: true, Set: localPods(v6)},
				}, Verdict: ruleset.Jump{Chain: ChainDeny}})
			}
		}
		t.PutChain(c)
	}
}

// Result says what an Update changed that callers report on.
type Result struct {
	// Policies are the policies added, changed or removed, sorted.
	Policies []model.PolicyKey
}

// Update brings the table in line with st. With ch.Full, or ch nil, the
// planner finds the changes itself by comparing st with what it last saw;
// otherwise it trusts the keys in ch.
func (p *Planner) Update(st *model.State, ch *model.Changes) Result {
	podKeys, nsKeys, polKeys, nodeChanged := p.changedKeys(st, ch)

	for _, name := range nsKeys {
		if ns := st.Namespaces[name]; ns != nil {
			p.namespaces[name] = ns
		} else {
			delete(p.namespaces, name)
		}
	}
	if nodeChanged {
		p.node = st.Nodes[p.cfg.NodeName]
		p.planLocalCIDRs()
	}
	// Pods first, so that re-planned policies see the new pods.
	for _, k := range podKeys {
		p.removePod(k)
		if pod := st.Pods[k]; pod != nil {
			p.pods[k] = pod
			if p.byNS[k.Namespace] == nil {
				p.byNS[k.Namespace] = map[model.PodKey]*model.Pod{}
			}
			p.byNS[k.Namespace][k] = pod
		}
	}
	nsTouched := map[string]bool{}
	for _, k := range polKeys {
		p.removePolicy(k)
		if pol := st.Policies[k]; pol != nil {
			p.addPolicy(pol)
		}
		nsTouched[k.Namespace] = true
	}
	for _, ns := range slices.Sorted(maps.Keys(nsTouched)) {
		p.planNamespaceChains(ns)
	}
	// Pods whose own contributions must be recomputed for every policy: the
	// changed pods and the pods of namespaces whose labels changed.
	redo := map[model.PodKey]bool{}
	for _, k := range podKeys {
		redo[k] = true
	}
	for _, name := range nsKeys {
		for k := range p.byNS[name] {
			redo[k] = true
		}
	}
	fresh := map[model.PolicyKey]bool{}
	for _, k := range polKeys {
		fresh[k] = true
	}
	for k := range redo {
		pod := p.pods[k]
		if pod == nil {
			continue
		}
		for pk, pp := range p.plans {
			if fresh[pk] {
				continue // addPolicy already counted this pod
			}
			p.setContribution(k, pk, pp.contribute(nil, pod, p.namespaces[pod.Namespace], p.cfg.NodeName))
		}
		p.planLocalPod(pod)
	}
	return Result{Policies: polKeys}
}

// changedKeys lists what differs between st and what the planner last saw.
func (p *Planner) changedKeys(st *model.State, ch *model.Changes) (pods []model.PodKey, nss []string, pols []model.PolicyKey, node bool) {
	if ch != nil && !ch.Full {
		return slices.Collect(maps.Keys(ch.Pods)), slices.Collect(maps.Keys(ch.Namespaces)),
			slices.SortedFunc(maps.Keys(ch.Policies), comparePolicyKey), ch.Nodes.Has(p.cfg.NodeName)
	}
	pods = diffKeys(p.pods, st.Pods, (*model.Pod).Equal)
	nss = diffKeys(p.namespaces, st.Namespaces, (*model.Namespace).Equal)
	old := make(map[model.PolicyKey]*model.Policy, len(p.plans))
	for k, pp := range p.plans {
		old[k] = pp.pol
	}
	pols = diffKeys(old, st.Policies, (*model.Policy).Equal)
	slices.SortFunc(pols, comparePolicyKey)
	return pods, nss, pols, !p.node.Equal(st.Nodes[p.cfg.NodeName]) || p.node == nil
}

func diffKeys[K comparable, V comparable](have, want map[K]V, eq func(V, V) bool) []K {
	var out []K
	for k, v := range want {
		if o, ok := have[k]; !ok || (o != v && !eq(o, v)) {
			out = append(out, k)
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

func comparePolicyKey(a, b model.PolicyKey) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

func (p *Planner) removePod(k model.PodKey) {
	for pk := range p.contrib[k] {
		p.setContribution(k, pk, nil)
	}
	delete(p.contrib, k)
	for _, se := range p.local[k] {
		p.t.RemoveElement(se.set, se.e)
	}
	delete(p.local, k)
	delete(p.pods, k)
	if m := p.byNS[k.Namespace]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(p.byNS, k.Namespace)
		}
	}
}

// setContribution replaces what pod k brings for policy pk.
func (p *Planner) setContribution(k model.PodKey, pk model.PolicyKey, els []setElem) {
	m := p.contrib[k]
	for _, se := range m[pk] {
		p.t.RemoveElement(se.set, se.e)
	}
	for _, se := range els {
		p.t.AddElement(se.set, se.e)
	}
	if len(els) == 0 {
		delete(m, pk)
		return
	}
	if m == nil {
		m = map[model.PolicyKey][]setElem{}
		p.contrib[k] = m
	}
	m[pk] = els
}

func (p *Planner) removePolicy(k model.PolicyKey) {
	pp := p.plans[k]
	if pp == nil {
		return
	}
	for pod := range p.contrib {
		if _, ok := p.contrib[pod][k]; ok {
			p.setContribution(pod, k, nil)
		}
	}
	for _, c := range pp.chains {
		p.t.DeleteChain(c.Name)
	}
	for _, s := range pp.sets {
		p.t.DeleteSet(s.Name)
	}
	delete(p.plans, k)
}

func (p *Planner) addPolicy(pol *model.Policy) {
	pp := planPolicy(pol)
	p.plans[pol.Key()] = pp
	for _, s := range pp.sets {
		p.t.PutSet(s)
	}
	for _, se := range pp.static {
		p.t.AddElement(se.set, se.e)
	}
	for _, c := range pp.chains {
		p.t.PutChain(c)
	}
	nss, all := pp.candidateNamespaces(p.byNS, p.namespaces)
	for ns, pods := range p.byNS {
		if !all && !nss[ns] {
			continue
		}
		for k, pod := range pods {
			p.setContribution(k, pol.Key(), pp.contribute(nil, pod, p.namespaces[ns], p.cfg.NodeName))
		}
	}
}

// planNamespaceChains rewrites the dispatch chains of one namespace.
func (p *Planner) planNamespaceChains(ns string) {
	var keys []model.PolicyKey
	for k := range p.plans {
		if k.Namespace == ns {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, comparePolicyKey)
	for _, d := range []direction{ingress, egress} {
		c := &ruleset.Chain{Name: nsChain(d, ns), Comment: fmt.Sprintf("%s policies of namespace %s", d.long(), ns)}
		isolated := false
		for _, k := range keys {
			pol := p.plans[k].pol
			if (d == ingress && !pol.Ingress) || (d == egress && !pol.Egress) {
				continue
			}
			isolated = true
			rules := pol.IngressRules
			if d == egress {
				rules = pol.EgressRules
			}
			if len(rules) == 0 {
				continue // isolates, allows nothing
			}
			for _, v6 := range []bool{false, true} {
				c.Rules = append(c.Rules, ruleset.Rule{
					Matches: []ruleset.Match{ruleset.AddrIn{V6: v6, Src: d == egress, Set: targetSet(k, v6)}},
					Verdict: ruleset.Jump{Chain: policyChain(d, k)}})
			}
		}
		if !isolated {
			p.t.DeleteChain(c.Name)
			continue
		}
		c.Rules = append(c.Rules, ruleset.Rule{Verdict: ruleset.Jump{Chain: ChainDeny}})
		p.t.PutChain(c)
	}
}

func (p *Planner) planLocalPod(pod *model.Pod) {
	for _, se := range p.local[pod.Key()] {
		p.t.RemoveElement(se.set, se.e)
	}
	delete(p.local, pod.Key())
	if !p.cfg.DefaultDeny || pod.Node != p.cfg.NodeName {
		return
	}
	var els []setElem
	for _, ip := range pod.IPs {
		se := setElem{localPods(ip.Is6()), ruleset.Element{Addr: ip}}
		p.t.AddElement(se.set, se.e)
		els = append(els, se)
	}
	p.local[pod.Key()] = els
}

func (p *Planner) planLocalCIDRs() {
	if !p.cfg.DefaultDeny {
		return
	}
	for _, v6 := range []bool{false, true} {
		s := p.t.Sets[localCIDRs(v6)]
		for _, e := range ruleset.SortedElements(s) {
			p.t.RemoveElement(s.Name, e)
		}
		if p.node == nil {
			continue
		}
		for _, e := range ruleset.PrefixRanges(p.node.PodCIDRs, nil, v6) {
			p.t.AddElement(s.Name, e)
		}
	}
}
