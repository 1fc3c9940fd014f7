package svcproxy

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Config is what the planner needs to know about this node and the cluster.
type Config struct {
	// NodeName is this node's name: its endpoints are local, its addresses
	// serve NodePorts.
	NodeName string
	// NodePortBindOnAllIPs (--nodeport-bindon-all-ip) serves NodePorts on
	// every address of the Node object, not only its node IP per family.
	NodePortBindOnAllIPs bool
	// NodePortCIDRs (--nodeport-addresses) serve NodePorts only on the
	// addresses of the Node object within them; nil: as above.
	NodePortCIDRs []netip.Prefix
	// MasqueradeAll (--masquerade-all) masquerades every connection to a
	// service, not only those from outside the cluster CIDRs.
	MasqueradeAll bool
	// ClusterCIDRs (--cluster-cidr) are the cluster's pod CIDRs; nil means
	// the pod CIDRs of every Node object.
	ClusterCIDRs []netip.Prefix
	// ServiceCIDRs (--service-cluster-ip-range) are the ranges cluster IPs
	// are allocated from: traffic to an address in them that no service
	// has is dropped. Empty: not known, not dropped.
	ServiceCIDRs []netip.Prefix
}

// Planner keeps the service proxy's objects in a ruleset.Table up to date
// with the model, re-planning only the service ports a change names. It
// touches no kernel state.
type Planner struct {
	t   *ruleset.Table
	cfg Config

	// claims are what each service port wants, by address.
	claims map[model.ServicePortKey]portPlans
	// claimants are the service ports that want each address, sorted; the
	// first one owns it, whatever the order they came in.
	claimants map[vipKey][]model.ServicePortKey
	// programmed is what the table holds for each address, and for whom.
	programmed map[vipKey]programmedVIP
	// affinityProblems are the service ports whose affinity cannot be
	// programmed; problems the current problem of each port, as reported.
	affinityProblems map[model.ServicePortKey]string
	problems         map[model.ServicePortKey]Problem

	// inUse counts programmed addresses per family (0: IPv4, 1: IPv6);
	// a family's objects exist while it is positive.
	inUse [2]int
	// classes counts programmed addresses per family and endpoint count.
	classes [2]map[int]int
	// internalClasses counts programmed external addresses of traffic
	// policy Local per family and in-cluster endpoint count.
	internalClasses [2]map[int]int
	// affinity counts programmed sticky addresses per affinity map;
	// sticky is the sticky DNAT of each such address.
	affinity map[affinityKey]int
	sticky   map[vipKey]stickyRule
	// sources counts programmed restricted load-balancer IPs per service
	// port and family; firewall is the source set of each such address.
	sources  map[sourcesKey]int
	firewall map[vipKey]string
	// cidrs are the cluster CIDR elements per family.
	cidrs [2][]ruleset.Element
	// noCIDRs: neither --cluster-cidr nor any node's pod CIDR is known, so
	// every connection to a cluster IP is masqueraded.
	noCIDRs bool
	// rulesDirty says that the chains must be rebuilt: a family, class or
	// sticky address came or went.
	rulesDirty bool

	// What changes left outside the table until TakeStale (stale.go):
	// staleFlows, UDP/SCTP addresses gone, affinity maps that lost an
	// endpoint.
	staleFlows    bool
	goneFlows     []FlowAddr
	staleAffinity map[string]struct{}
}

// stickyRule is where a sticky address sends a client it remembers.
type stickyRule struct {
	affinityMap string
	port        uint16
}

type programmedVIP struct {
	owner model.ServicePortKey
	plan  *vipPlan
}

// affinityKey names the affinity objects of one service port and family.
type affinityKey struct {
	port    model.ServicePortKey
	v6      bool
	timeout time.Duration
}

// sourcesKey names the source-range set of one service port and family.
type sourcesKey struct {
	port model.ServicePortKey
	v6   bool
}

// Problem is a service port that cannot be programmed as asked.
type Problem struct {
	Port    model.ServicePortKey
	Reason  string // Event reason: AddressConflict, AffinityNotPossible
	Message string // "" when the problem went away
}

// Result is what one Update changed.
type Result struct {
	// Ports are the service ports re-planned.
	Ports int
	// Problems are the service ports whose problem changed.
	Problems []Problem
}

// New returns a planner writing into t.
func New(t *ruleset.Table, cfg Config) *Planner {
	return &Planner{t: t, cfg: cfg,
		claims:           map[model.ServicePortKey]portPlans{},
		claimants:        map[vipKey][]model.ServicePortKey{},
		programmed:       map[vipKey]programmedVIP{},
		problems:         map[model.ServicePortKey]Problem{},
		affinityProblems: map[model.ServicePortKey]string{},
		classes:          [2]map[int]int{{}, {}},
		internalClasses:  [2]map[int]int{{}, {}},
		affinity:         map[affinityKey]int{},
		sticky:           map[vipKey]stickyRule{},
		sources:          map[sourcesKey]int{},
		firewall:         map[vipKey]string{},
		rulesDirty:       true,
		staleAffinity:    map[string]struct{}{},
	}
}

// Update re-plans the service ports changes names (every one with
// changes.Full, every NodePort when this node changed) against state.
func (p *Planner) Update(state *model.State, changes *model.Changes) *Result {
	full := changes == nil || changes.Full
	res := &Result{}
	touched := map[vipKey]struct{}{}
	keys := p.affected(state, changes, full)
	node := state.Nodes.Get(p.cfg.NodeName)
	for _, k := range keys {
		plans, problem := planPort(state.ServicePorts.Get(k), state.Endpoints.Get(k), node, p.cfg)
		old := p.claims[k]
		for _, c := range old {
			if plans.get(c.key) == nil {
				p.unclaim(c.key, k)
				touched[c.key] = struct{}{}
			}
		}
		for i, c := range plans {
			if prev := old.get(c.key); prev == nil {
				p.claim(c.key, k)
			} else if prev.equal(c.plan) {
				plans[i].plan = prev // keep the pointer the table holds
				continue
			}
			touched[c.key] = struct{}{}
		}
		if len(plans) == 0 {
			delete(p.claims, k)
		} else {
			p.claims[k] = plans
		}
		if problem == "" {
			delete(p.affinityProblems, k)
		} else {
			p.affinityProblems[k] = problem
		}
	}
	res.Ports = len(keys)
	for _, vk := range slices.SortedFunc(maps.Keys(touched), vipKey.compare) {
		p.resolve(vk)
	}
	p.report(res, keys, touched)
	if full || (len(changes.Nodes) > 0 && len(p.cfg.ClusterCIDRs) == 0) {
		p.updateCIDRs(state)
	}
	if p.rulesDirty || full {
		p.putChains()
		p.rulesDirty = false
	}
	return res
}

// NoClusterCIDRs reports that no cluster CIDR is known (no --cluster-cidr,
// no node with a pod CIDR) while pods' connections should keep their
// address: every connection to a cluster IP is masqueraded then.
func (p *Planner) NoClusterCIDRs() bool { return p.noCIDRs && !p.cfg.MasqueradeAll }

// affected lists the service ports to re-plan, sorted.
func (p *Planner) affected(state *model.State, changes *model.Changes, full bool) []model.ServicePortKey {
	set := map[model.ServicePortKey]struct{}{}
	if !full {
		maps.Copy(set, changes.ServicePorts)
		maps.Copy(set, changes.Endpoints)
	}
	// A change of this node's addresses or name may change every NodePort
	// and every endpoint's locality.
	if full || changes.Nodes.Has(p.cfg.NodeName) {
		for k := range state.ServicePorts.All() {
			set[k] = struct{}{}
		}
		for k := range p.claims {
			set[k] = struct{}{}
		}
	}
	return slices.SortedFunc(maps.Keys(set), model.ServicePortKey.Compare)
}

func (p *Planner) claim(vk vipKey, k model.ServicePortKey) {
	cs := p.claimants[vk]
	i, _ := slices.BinarySearchFunc(cs, k, model.ServicePortKey.Compare)
	p.claimants[vk] = slices.Insert(cs, i, k)
}

func (p *Planner) unclaim(vk vipKey, k model.ServicePortKey) {
	cs := p.claimants[vk]
	if i, ok := slices.BinarySearchFunc(cs, k, model.ServicePortKey.Compare); ok {
		cs = slices.Delete(cs, i, i+1)
	}
	if len(cs) == 0 {
		delete(p.claimants, vk)
	} else {
		p.claimants[vk] = cs
	}
}

// resolve brings the table's objects for one address in line with what its
// owner wants.
func (p *Planner) resolve(vk vipKey) {
	old, had := p.programmed[vk]
	var want programmedVIP
	cs := p.claimants[vk]
	if len(cs) > 0 {
		want = programmedVIP{owner: cs[0], plan: p.claims[cs[0]].get(vk)}
	}
	if had && len(cs) > 0 && old.owner == want.owner && old.plan.equal(want.plan) {
		p.programmed[vk] = want
		return
	}
	// Add before removing, so that what both hold (the family's objects,
	// the class sets, shared elements) never goes and comes back.
	if len(cs) > 0 {
		p.add(vk, want)
		p.programmed[vk] = want
	} else {
		delete(p.programmed, vk)
	}
	if had {
		p.remove(vk, old)
	}
	var rule stickyRule
	if len(cs) > 0 && want.plan.sticky() {
		rule = stickyRule{AffinityMap(want.owner, vk.Addr.Is6(), want.plan.Affinity), want.plan.StickyPort}
	}
	if had && old.plan.sticky() && (len(cs) == 0 || lostEndpoint(old.plan, want.plan)) {
		// Clients stuck to an endpoint that is gone must choose again:
		// the caller deletes their entries once the kernel holds this.
		p.staleAffinity[AffinityMap(old.owner, vk.Addr.Is6(), old.plan.Affinity)] = struct{}{}
	}
	var oldPlan, newPlan *vipPlan
	if had {
		oldPlan = old.plan
	}
	if len(cs) > 0 {
		newPlan = want.plan
	}
	p.noteFlows(vk, oldPlan, newPlan)
	var fw string
	if len(cs) > 0 && want.plan.Restricted {
		fw = SourceRangesSet(want.owner, vk.Addr.Is6())
	}
	if p.firewall[vk] != fw {
		if fw == "" {
			delete(p.firewall, vk)
		} else {
			p.firewall[vk] = fw
		}
		p.rulesDirty = true
	}
	if p.sticky[vk] != rule {
		if rule == (stickyRule{}) {
			delete(p.sticky, vk)
		} else {
			p.sticky[vk] = rule
		}
		p.rulesDirty = true
	}
}

func lostEndpoint(old, new *vipPlan) bool {
	for _, e := range old.Endpoints {
		if !slices.ContainsFunc(new.Endpoints, e.sameTarget) {
			return true
		}
	}
	return false
}

// report works out the problems of the re-planned ports and of the
// claimants of touched addresses, and reports those that changed: an
// address another port owns, else affinity that cannot be programmed.
func (p *Planner) report(res *Result, keys []model.ServicePortKey, touched map[vipKey]struct{}) {
	check := map[model.ServicePortKey]struct{}{}
	for _, k := range keys {
		check[k] = struct{}{}
	}
	for vk := range touched {
		for _, c := range p.claimants[vk] {
			check[c] = struct{}{}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(check), model.ServicePortKey.Compare) {
		want := Problem{Port: k}
		for _, vk := range slices.SortedFunc(p.claims[k].keys(), vipKey.compare) {
			if owner := p.claimants[vk][0]; owner != k {
				want.Reason, want.Message = "AddressConflict", vk.String()+" is already used by service port "+owner.String()
				break
			}
		}
		if msg := p.affinityProblems[k]; want.Message == "" && msg != "" {
			want.Reason, want.Message = "AffinityNotPossible", msg
		}
		old, had := p.problems[k]
		if !had && want.Message == "" || had && old == want {
			continue
		}
		if want.Message == "" {
			delete(p.problems, k)
			want.Reason = old.Reason
		} else {
			p.problems[k] = want
		}
		res.Problems = append(res.Problems, want)
	}
}

// updateCIDRs brings the cluster CIDR sets in line with the flag or the
// nodes' pod CIDRs.
func (p *Planner) updateCIDRs(state *model.State) {
	prefixes := model.ClusterCIDRs(p.cfg.ClusterCIDRs, state.Nodes)
	p.noCIDRs = len(prefixes) == 0
	for i, v6 := range []bool{false, true} {
		want := ruleset.PrefixRanges(prefixes, nil, v6)
		if slices.Equal(want, p.cidrs[i]) {
			continue
		}
		if p.inUse[i] > 0 {
			p.t.ReplaceElements(ClusterCIDRsSet(v6), want)
		}
		p.cidrs[i] = want
	}
}
