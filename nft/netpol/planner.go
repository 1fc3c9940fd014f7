package netpol

import (
	"fmt"
	"maps"
	"net/netip"
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
// model. Update does work proportional to what changed: a pod is checked
// against the shared sets that can hold pods of its namespace and the
// policies of its namespace, never against every policy. A Planner is not
// safe for concurrent use.
type Planner struct {
	cfg Config
	t   *ruleset.Table

	// What the table currently reflects.
	pods       map[model.PodKey]*model.Pod
	byNS       map[string]map[model.PodKey]*model.Pod
	namespaces map[string]*model.Namespace
	node       *model.Node
	plans      map[model.PolicyKey]*policyPlan
	plansByNS  map[string]map[model.PolicyKey]*policyPlan

	// sets are the shared sets by key; nsSets indexes those only pods of one
	// namespace can be in, anySets the others.
	sets    map[string]*sharedSet
	nsSets  map[string]map[*sharedSet]struct{}
	anySets map[*sharedSet]struct{}

	// podIn lists the shared sets each pod is in; iso holds the isolation
	// map elements each pod brings, per policy; local the elements of the
	// default-deny local-pod sets.
	podIn map[model.PodKey]map[*sharedSet]struct{}
	iso   map[model.PodKey]map[model.PolicyKey][]setElem
	local map[model.PodKey][]setElem

	// fams are the address families the table holds objects for; count
	// what brings them in the state the table reflects.
	fams  families
	count famCount

	// owned are the chains and sets this planner put into the table; other
	// planners write into the same table, so a reset removes only these.
	owned ownedNames
}

// sharedSet is a setSpec in use by refs policies, with what each pod brought
// to it.
type sharedSet struct {
	spec    *setSpec
	refs    int
	members map[model.PodKey][]setElem
}

// New returns a planner that writes into t and installs the objects every
// firewall has.
func New(t *ruleset.Table, cfg Config) *Planner {
	p := &Planner{cfg: cfg, t: t}
	p.init(families{})
	return p
}

// init empties the planner's indexes and installs the base objects for fams.
func (p *Planner) init(fams families) {
	*p = Planner{cfg: p.cfg, t: p.t, fams: fams, owned: p.owned,
		pods: map[model.PodKey]*model.Pod{}, byNS: map[string]map[model.PodKey]*model.Pod{},
		namespaces: map[string]*model.Namespace{}, plans: map[model.PolicyKey]*policyPlan{},
		plansByNS: map[string]map[model.PolicyKey]*policyPlan{},
		sets:      map[string]*sharedSet{}, nsSets: map[string]map[*sharedSet]struct{}{}, anySets: map[*sharedSet]struct{}{},
		podIn: map[model.PodKey]map[*sharedSet]struct{}{}, iso: map[model.PodKey]map[model.PolicyKey][]setElem{},
		local: map[model.PodKey][]setElem{}}
	p.installBase()
}

// reset removes everything from the table and starts over planning fams.
func (p *Planner) reset(fams families) {
	for name := range p.owned.chains {
		p.deleteChain(name)
	}
	for name := range p.owned.sets {
		p.deleteSet(name)
	}
	p.init(fams)
}

func (p *Planner) installBase() {
	for _, v6 := range p.fams.list() {
		for _, d := range []direction{ingress, egress} {
			p.putSet(ruleset.Set{Name: isolatedSet(d, v6), Type: ruleset.AddrKey(v6),
				Comment: "local pods isolated for " + d.long()})
		}
		if p.cfg.DefaultDeny {
			p.putSet(ruleset.Set{Name: localCIDRs(v6), Type: ruleset.AddrKey(v6), Interval: true, Comment: "pod CIDRs of this node"})
			p.putSet(ruleset.Set{Name: localPods(v6), Type: ruleset.AddrKey(v6), Comment: "local pods the firewall has programmed"})
		}
	}
	p.putChain(denyRules(&ruleset.Chain{Name: ChainDeny,
		Comment: "log (nflog group 100), count and drop traffic of pod addresses no namespace chain judged"}, "nfrouter deny: "))
	for _, c := range baseChains() {
		p.putChain(p.baseChainRules(c))
	}
	p.planDispatch()
}

// baseChain is one of the hooks where the firewall sees pod traffic.
type baseChain struct {
	name, comment string
	dir           direction
	hook          ruleset.Hook
	// output is the output hook, where the node's own traffic passes too.
	output bool
}

// baseChains are the firewall's entry points. Egress runs before ingress on
// each hook: an accept ends only the base chain it happens in, so a packet
// between two local pods passes the source's egress policies and then the
// destination's ingress policies.
func baseChains() []baseChain {
	return []baseChain{
		{name: ChainEgress, comment: "egress policies of local pods", dir: egress,
			hook: ruleset.Hook{Hook: "forward", Type: "filter", Priority: -1}},
		{name: ChainIngress, comment: "ingress policies of local pods", dir: ingress,
			hook: ruleset.Hook{Hook: "forward", Type: "filter"}},
		{name: ChainEgressOutput, comment: "egress policies of local pods, for traffic the node sends on their behalf (IPVS)", dir: egress,
			hook: ruleset.Hook{Hook: "output", Type: "filter", Priority: -1}, output: true},
		{name: ChainIngressOutput, comment: "ingress policies of local pods, for traffic the node sends on another's behalf (IPVS)", dir: ingress,
			hook: ruleset.Hook{Hook: "output", Type: "filter"}, output: true},
	}
}

// baseChainRules returns base chain b with its rules: established traffic
// passes, isolated pods go to their dispatch chain and, with default deny,
// addresses of the node's pod CIDRs the firewall does not know are denied.
// On the output hook only packets with a foreign source are judged: the
// node's own traffic to its pods (kubelet probes, a bridge gateway address)
// is never filtered, as on forward, where it never passes.
func (p *Planner) baseChainRules(b baseChain) *ruleset.Chain {
	c := &ruleset.Chain{Name: b.name, Comment: b.comment, Base: &b.hook}
	c.Rules = append(c.Rules, ruleset.Rule{Matches: []ruleset.Match{ruleset.CtEstablished{}}, Verdict: ruleset.Accept{}})
	if p.fams[idx(true)] && !b.output {
		// Neighbour discovery between pods on one bridge passes the
		// forward hook (br_netfilter) untracked, so the rule above
		// misses it; without it an isolated pod cannot confirm a
		// neighbour and its allowed connections stall.
		for _, nd := range []ruleset.ICMPv6Type{{Type: 135, Name: "nd-neighbor-solicit"}, {Type: 136, Name: "nd-neighbor-advert"}} {
			c.Rules = append(c.Rules, ruleset.Rule{Matches: []ruleset.Match{nd}, Verdict: ruleset.Accept{}})
		}
	}
	src := b.dir == egress
	judged := func(ms ...ruleset.Match) []ruleset.Match {
		if b.output {
			ms = append(ms, ruleset.SourceNotLocal{})
		}
		return ms
	}
	// A connection whose conntrack entry went (deleted when a policy began
	// to deny it) is picked up again by whichever of its packets comes next;
	// one from the server side would open it in the opposite direction,
	// which the policies judge differently. So mid-stream TCP packets of an
	// isolated pod's other side are denied: a pickup is allowed only in the
	// direction that the policies judged when the connection began.
	for _, v6 := range p.fams.list() {
		c.Rules = append(c.Rules, ruleset.Rule{Matches: judged(ruleset.AddrIn{V6: v6, Src: src, Set: isolatedSet(b.dir.opposite(), v6)}, ruleset.TCPMidStream{}),
			Verdict: ruleset.Jump{Chain: ChainDeny}})
	}
	for _, v6 := range p.fams.list() {
		c.Rules = append(c.Rules, ruleset.Rule{Matches: judged(ruleset.AddrIn{V6: v6, Src: src, Set: isolatedSet(b.dir, v6)}),
			Verdict: ruleset.Jump{Chain: dispatchChain(b.dir)}})
	}
	if p.cfg.DefaultDeny {
		for _, v6 := range p.fams.list() {
			c.Rules = append(c.Rules, ruleset.Rule{Matches: judged(
				ruleset.AddrIn{V6: v6, Src: src, Set: localCIDRs(v6)},
				ruleset.AddrIn{V6: v6, Src: src, Not: true, Set: localPods(v6)},
			), Verdict: ruleset.Jump{Chain: ChainDeny}})
		}
	}
	return c
}

// Result says what an Update changed that callers report on.
type Result struct {
	// Policies are the policies added, changed or removed, sorted.
	Policies []model.PolicyKey
	// MayDeny says the update may deny flows that were allowed before: a
	// policy or a namespace changed, or a running pod's labels or named
	// ports did. Pods that come, get their address or go cannot: a new pod
	// has no flows yet, a gone one none left.
	MayDeny bool
}

// Update brings the table in line with st. With ch.Full, or ch nil, the
// planner finds the changes itself by comparing st with what it last saw;
// otherwise it trusts the keys in ch.
func (p *Planner) Update(st *model.State, ch *model.Changes) Result {
	podKeys, nsKeys, polKeys, nodeChanged := p.changedKeys(st, ch)
	res := Result{Policies: polKeys, MayDeny: len(polKeys) > 0 || len(nsKeys) > 0}
	for _, k := range podKeys {
		if old, pod := p.pods[k], st.Pods.Get(k); old != nil && pod != nil && len(old.IPs) > 0 &&
			(!maps.Equal(old.Labels, pod.Labels) || !slices.Equal(old.Ports, pod.Ports)) {
			res.MayDeny = true
		}
	}
	if count := p.countAfter(st, podKeys, polKeys, nodeChanged); count.families() != p.fams {
		// A family comes or goes: its objects appear or vanish everywhere,
		// so plan the whole state afresh.
		p.reset(count.families())
		podKeys, nsKeys, polKeys, nodeChanged = p.changedKeys(st, nil)
	}
	p.count = p.countAfter(st, podKeys, polKeys, nodeChanged)

	// Pending pods leave every set and map now and are planned once at the
	// end, against the final policies: the changed pods and the pods of
	// namespaces whose labels changed.
	pending := map[model.PodKey]bool{}
	for _, k := range podKeys {
		pending[k] = true
	}
	for _, name := range nsKeys {
		if ns := st.Namespaces.Get(name); ns != nil {
			p.namespaces[name] = ns
		} else {
			delete(p.namespaces, name)
		}
		for k := range p.byNS[name] {
			pending[k] = true
		}
	}
	for k := range pending {
		p.unplanPod(k)
	}
	if nodeChanged {
		p.node = st.Nodes.Get(p.cfg.NodeName)
		p.planLocalCIDRs()
	}
	for _, k := range podKeys {
		p.forgetPod(k)
		if pod := st.Pods.Get(k); pod != nil {
			p.pods[k] = pod
			if p.byNS[k.Namespace] == nil {
				p.byNS[k.Namespace] = map[model.PodKey]*model.Pod{}
			}
			p.byNS[k.Namespace][k] = pod
		}
	}
	nsTouched := map[string]bool{}
	for _, k := range polKeys {
		p.replacePolicy(k, st.Policies.Get(k), pending)
		nsTouched[k.Namespace] = true
	}
	for _, ns := range slices.Sorted(maps.Keys(nsTouched)) {
		p.planNamespaceChains(ns)
	}
	if len(polKeys) > 0 {
		p.planDispatch()
	}
	for k := range pending {
		if pod := p.pods[k]; pod != nil {
			p.planPod(pod)
		}
	}
	return res
}

// countAfter returns the family count once the given changes are made.
func (p *Planner) countAfter(st *model.State, pods []model.PodKey, pols []model.PolicyKey, node bool) famCount {
	c := p.count
	for _, k := range pods {
		c.pod(-1, p.pods[k])
		c.pod(1, st.Pods.Get(k))
	}
	for _, k := range pols {
		if old := p.plans[k]; old != nil {
			c.policy(-1, old.pol)
		}
		c.policy(1, st.Policies.Get(k))
	}
	if node {
		c.node(-1, p.node)
		c.node(1, st.Nodes.Get(p.cfg.NodeName))
	}
	return c
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
	return pods, nss, pols, !p.node.Equal(st.Nodes.Get(p.cfg.NodeName)) || p.node == nil
}

func diffKeys[K comparable, V comparable](have map[K]V, want model.Map[K, V], eq func(V, V) bool) []K {
	var out []K
	for k, v := range want.All() {
		if o, ok := have[k]; !ok || (o != v && !eq(o, v)) {
			out = append(out, k)
		}
	}
	for k := range have {
		if !want.Has(k) {
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

// unplanPod takes everything pod k brought out of the table.
func (p *Planner) unplanPod(k model.PodKey) {
	for s := range p.podIn[k] {
		for _, se := range s.members[k] {
			p.t.RemoveElement(se.set, se.e)
		}
		delete(s.members, k)
	}
	delete(p.podIn, k)
	for _, els := range p.iso[k] {
		for _, se := range els {
			p.t.RemoveElement(se.set, se.e)
		}
	}
	delete(p.iso, k)
	for _, se := range p.local[k] {
		p.t.RemoveElement(se.set, se.e)
	}
	delete(p.local, k)
}

// forgetPod drops pod k from the planner's indexes.
func (p *Planner) forgetPod(k model.PodKey) {
	delete(p.pods, k)
	if m := p.byNS[k.Namespace]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(p.byNS, k.Namespace)
		}
	}
}

// planPod adds what pod brings to the shared sets that can hold pods of its
// namespace, to the isolation maps for the policies of its namespace, and to
// the default-deny local-pod sets.
func (p *Planner) planPod(pod *model.Pod) {
	k := pod.Key()
	ns := p.namespaces[pod.Namespace]
	for s := range p.nsSets[pod.Namespace] {
		p.join(s, k, pod, ns)
	}
	for s := range p.anySets {
		p.join(s, k, pod, ns)
	}
	for pk, pp := range p.plansByNS[pod.Namespace] {
		p.setIsolation(k, pk, pp.isolation(pod, p.cfg.NodeName))
	}
	p.planLocalPod(pod)
}

// join adds what pod k brings to set s, if anything.
func (p *Planner) join(s *sharedSet, k model.PodKey, pod *model.Pod, ns *model.Namespace) {
	els := s.spec.elements(pod, ns)
	if len(els) == 0 {
		return
	}
	for _, se := range els {
		p.t.AddElement(se.set, se.e)
	}
	s.members[k] = els
	if p.podIn[k] == nil {
		p.podIn[k] = map[*sharedSet]struct{}{}
	}
	p.podIn[k][s] = struct{}{}
}

// setIsolation replaces the isolation-map elements pod k brings for policy pk.
func (p *Planner) setIsolation(k model.PodKey, pk model.PolicyKey, els []setElem) {
	m := p.iso[k]
	for _, se := range m[pk] {
		p.t.RemoveElement(se.set, se.e)
	}
	for _, se := range els {
		p.t.AddElement(se.set, se.e)
	}
	if len(els) == 0 {
		delete(m, pk)
		if len(m) == 0 {
			delete(p.iso, k)
		}
		return
	}
	if m == nil {
		m = map[model.PolicyKey][]setElem{}
		p.iso[k] = m
	}
	m[pk] = els
}

// replacePolicy replaces policy k by pol (nil: removes it). Sets the old and
// new versions share stay in place; pods not pending are planned against the
// new version here, pending ones later by planPod.
func (p *Planner) replacePolicy(k model.PolicyKey, pol *model.Policy, pending map[model.PodKey]bool) {
	old := p.plans[k]
	var pp *policyPlan
	if pol != nil {
		pp = planPolicy(pol, p.fams)
		for _, spec := range pp.uses {
			p.acquire(spec, pending)
		}
		for _, c := range pp.chains {
			p.putChain(c)
		}
		for _, d := range pp.isolates() {
			for _, v6 := range p.fams.list() {
				p.putSet(ruleset.Set{Name: nsIsolatedSet(d, k.Namespace, v6), Type: ruleset.AddrKey(v6),
					Comment: fmt.Sprintf("local pods of namespace %s isolated for %s", k.Namespace, d.long())})
			}
		}
		p.plans[k] = pp
		if p.plansByNS[k.Namespace] == nil {
			p.plansByNS[k.Namespace] = map[model.PolicyKey]*policyPlan{}
		}
		p.plansByNS[k.Namespace][k] = pp
	} else {
		delete(p.plans, k)
		if m := p.plansByNS[k.Namespace]; m != nil {
			delete(m, k)
			if len(m) == 0 {
				delete(p.plansByNS, k.Namespace)
			}
		}
	}
	if old != nil {
		for _, c := range old.chains {
			if pp == nil || !slices.ContainsFunc(pp.chains, func(n *ruleset.Chain) bool { return n.Name == c.Name }) {
				p.deleteChain(c.Name)
			}
		}
		for _, spec := range old.uses {
			p.release(spec.key)
		}
	}
	for pk, pod := range p.byNS[k.Namespace] {
		if pending[pk] {
			continue
		}
		var els []setElem
		if pp != nil {
			els = pp.isolation(pod, p.cfg.NodeName)
		}
		p.setIsolation(pk, k, els)
	}
}

// acquire takes a reference on the shared set of spec, creating and filling
// it (with the pods that are not pending) if it is new.
func (p *Planner) acquire(spec *setSpec, pending map[model.PodKey]bool) {
	s := p.sets[spec.key]
	if s != nil {
		s.refs++
		return
	}
	s = &sharedSet{spec: spec, refs: 1, members: map[model.PodKey][]setElem{}}
	p.sets[spec.key] = s
	for _, d := range spec.defs() {
		p.putSet(d)
	}
	for _, e := range spec.static {
		p.t.AddElement(spec.names[idx(e.Addr.Is6())], e)
	}
	switch {
	case spec.kind == cidrSet:
		return
	case spec.kind == podsSet && spec.ns != "":
		if p.nsSets[spec.ns] == nil {
			p.nsSets[spec.ns] = map[*sharedSet]struct{}{}
		}
		p.nsSets[spec.ns][s] = struct{}{}
	default:
		p.anySets[s] = struct{}{}
	}
	for name, pods := range p.byNS {
		ns := p.namespaces[name]
		if !spec.mayMatchNS(name, ns) {
			continue
		}
		for k, pod := range pods {
			if !pending[k] {
				p.join(s, k, pod, ns)
			}
		}
	}
}

// release drops a reference on a shared set and deletes it with the last.
func (p *Planner) release(key string) {
	s := p.sets[key]
	if s.refs--; s.refs > 0 {
		return
	}
	for _, name := range s.spec.names {
		if name != "" {
			p.deleteSet(name)
		}
	}
	for k := range s.members {
		if m := p.podIn[k]; m != nil {
			delete(m, s)
			if len(m) == 0 {
				delete(p.podIn, k)
			}
		}
	}
	delete(p.sets, key)
	if m := p.nsSets[s.spec.ns]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(p.nsSets, s.spec.ns)
		}
	}
	delete(p.anySets, s)
}

// planNamespaceChains rewrites the dispatch chains of one namespace.
func (p *Planner) planNamespaceChains(ns string) {
	keys := slices.SortedFunc(maps.Keys(p.plansByNS[ns]), comparePolicyKey)
	for _, d := range []direction{ingress, egress} {
		c := &ruleset.Chain{Name: nsChain(d, ns), Comment: fmt.Sprintf("%s policies of namespace %s", d.long(), ns)}
		isolated := false
		for _, k := range keys {
			isolates, rules := side(p.plans[k].pol, d)
			if !isolates {
				continue
			}
			isolated = true
			if len(rules) == 0 {
				continue // isolates, allows nothing
			}
			for _, v6 := range p.fams.list() {
				c.Rules = append(c.Rules, ruleset.Rule{
					Matches: []ruleset.Match{ruleset.AddrIn{V6: v6, Src: d == egress, Set: p.plans[k].target.names[idx(v6)]}},
					Verdict: ruleset.Jump{Chain: policyChain(d, k)}})
			}
		}
		if !isolated {
			p.deleteChain(c.Name)
			p.deleteChain(denyChain(d, ns))
			for _, v6 := range p.fams.list() {
				p.deleteSet(nsIsolatedSet(d, ns, v6))
			}
			continue
		}
		c.Rules = append(c.Rules, ruleset.Rule{Verdict: ruleset.Jump{Chain: denyChain(d, ns)}})
		p.putChain(c)
		p.putChain(denyRules(&ruleset.Chain{Name: denyChain(d, ns),
			Comment: fmt.Sprintf("log (nflog group 100), count and drop what no %s policy of namespace %s allows", d.long(), ns)},
			denyPrefix(d, ns)))
	}
}

// planDispatch rewrites the chains that send an isolated pod's traffic to
// its namespace's chain: one rule per namespace and family. A verdict map
// from pod address to namespace chain would be one lookup instead of a scan,
// but the kernel revalidates every jump of the whole table (each map element
// and all it reaches) whenever a jump element is added, which at thousands
// of pods costs milliseconds per pod; set elements cost no validation. The
// scan is paid once per new connection (established traffic is accepted
// first) and only for isolated pods, over the namespaces that have policies.
func (p *Planner) planDispatch() {
	for _, d := range []direction{ingress, egress} {
		c := &ruleset.Chain{Name: dispatchChain(d),
			Comment: "isolated local pods for " + d.long() + ": to their namespace's policies"}
		for _, ns := range slices.Sorted(maps.Keys(p.plansByNS)) {
			if !p.nsIsolates(ns, d) {
				continue
			}
			for _, v6 := range p.fams.list() {
				c.Rules = append(c.Rules, ruleset.Rule{
					Matches: []ruleset.Match{ruleset.AddrIn{V6: v6, Src: d == egress, Set: nsIsolatedSet(d, ns, v6)}},
					Verdict: ruleset.Jump{Chain: nsChain(d, ns)}})
			}
		}
		c.Rules = append(c.Rules, ruleset.Rule{Verdict: ruleset.Jump{Chain: ChainDeny}})
		p.putChain(c)
	}
}

// denyRules gives c the rules of a deny chain: log at a rate of its own,
// with prefix, then count and drop. A chain per namespace and direction
// keeps one namespace's noise from using up another's log rate and counts
// drops per namespace, at no cost per pod.
func denyRules(c *ruleset.Chain, prefix string) *ruleset.Chain {
	c.Rules = []ruleset.Rule{
		{Matches: []ruleset.Match{ruleset.LogLimited{Group: NFLogGroup, Prefix: prefix}}},
		{Matches: []ruleset.Match{ruleset.Counter{}}, Verdict: ruleset.Drop{}},
	}
	return c
}

// DenyChain is a chain that drops what a namespace's policies do not allow
// in one direction; the namespace is "" for the chain of pod addresses no
// namespace judged.
type DenyChain struct {
	Chain, Namespace string
	Ingress          bool
}

// DenyChains lists the deny chains the table holds.
func (p *Planner) DenyChains() []DenyChain {
	out := []DenyChain{{Chain: ChainDeny}}
	for _, ns := range slices.Sorted(maps.Keys(p.plansByNS)) {
		for _, d := range []direction{ingress, egress} {
			if p.nsIsolates(ns, d) {
				out = append(out, DenyChain{Chain: denyChain(d, ns), Namespace: ns, Ingress: d == ingress})
			}
		}
	}
	return out
}

// nsIsolates reports whether some policy of namespace ns isolates its pods
// in direction d.
func (p *Planner) nsIsolates(ns string, d direction) bool {
	for _, pp := range p.plansByNS[ns] {
		if isolates, _ := side(pp.pol, d); isolates {
			return true
		}
	}
	return false
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
	var cidrs []netip.Prefix
	if p.node != nil {
		cidrs = p.node.PodCIDRs
	}
	for _, v6 := range p.fams.list() {
		p.t.ReplaceElements(localCIDRs(v6), ruleset.PrefixRanges(cidrs, nil, v6))
	}
}
