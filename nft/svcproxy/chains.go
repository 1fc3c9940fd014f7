package svcproxy

import (
	"cmp"
	"maps"
	"slices"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Chain priorities: NAT at the standard ones; the reject filter a little
// before the standard filter priority, so that a rejected packet meets no
// policy chain.
const (
	prioDstNAT = -100
	prioSrcNAT = 100
	prioFilter = -10
	// prioFirewall runs before DNAT, while the destination is still the
	// load-balancer IP.
	prioFirewall = -110
)

// putChains writes every chain from the families, classes and sticky
// addresses in use; the table notes only the chains that changed.
func (p *Planner) putChains() {
	jump := func(c string) ruleset.Rule { return ruleset.Rule{Verdict: ruleset.Jump{Chain: c}} }
	nat := func(name, hook string, prio int32, rules ...ruleset.Rule) {
		p.t.PutChain(&ruleset.Chain{Name: name, Base: &ruleset.Hook{Hook: hook, Type: "nat", Priority: prio}, Rules: rules})
	}
	// In-cluster clients of an external address of traffic policy Local
	// (pods, and the node itself, whose connections are masqueraded: they
	// would leave with that address as source) are sent to any endpoint
	// first, in services-internal, as kube-proxy does: their connection is
	// translated on their own node, so no reply can miss it.
	var pre, out, internal []ruleset.Rule
	for _, v6 := range []bool{false, true} {
		if p.inUse[famIndex(v6)] == 0 {
			continue
		}
		pre = append(pre, ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIn{V6: v6, Src: true, Set: ClusterCIDRsSet(v6)}},
			Verdict: ruleset.Jump{Chain: ChainInternal}})
		out = append(out, ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: v6, Set: LocalExternalSet(v6)},
			ruleset.MarkSet{Bits: ruleset.MasqueradeMark}}})
		for _, n := range p.classNumbers(p.internalClasses[famIndex(v6)]) {
			internal = append(internal, dnatSlotRules(InternalClassSet(n, v6), n, v6, InternalEndpointsMap)...)
		}
	}
	p.t.PutChain(&ruleset.Chain{Name: ChainInternal, Comment: "in-cluster clients of external addresses of traffic policy Local: any endpoint", Rules: internal})
	nat(ChainNATPrerouting, "prerouting", prioDstNAT, append(pre, jump(ChainDispatch))...)
	nat(ChainNATOutput, "output", prioDstNAT, append(out, jump(ChainInternal), jump(ChainDispatch))...)
	nat(ChainNATInput, "input", prioSrcNAT, jump(ChainRemember))

	var dispatch, reject, unknown, post []ruleset.Rule
	post = append(post, jump(ChainRemember), ruleset.Rule{
		Matches: []ruleset.Match{ruleset.MarkHas{Bits: ruleset.MasqueradeMark}, ruleset.MarkClear{Bits: ruleset.MasqueradeMark}},
		Verdict: ruleset.MasqueradeFullyRandom{}})
	for _, v6 := range []bool{false, true} {
		if p.inUse[famIndex(v6)] == 0 {
			continue
		}
		mark := []ruleset.Match{ruleset.DestPortIn{V6: v6, Set: MasqueradeSet(v6)}}
		if !p.cfg.MasqueradeAll {
			mark = append(mark, ruleset.AddrIn{V6: v6, Src: true, Not: true, Set: ClusterCIDRsSet(v6)})
		}
		dispatch = append(dispatch, ruleset.Rule{Matches: append(mark, ruleset.MarkSet{Bits: ruleset.MasqueradeMark})},
			ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: v6, Set: MasqueradeAlwaysSet(v6)}, ruleset.MarkSet{Bits: ruleset.MasqueradeMark}}})
		reject = append(reject, ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: v6, Set: NoEndpointsSet(v6)}},
			Verdict: ruleset.Reject{V6: v6}},
			ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: v6, Set: NoLocalEndpointsSet(v6)}}, Verdict: ruleset.Drop{}})
		// After DNAT: what still goes to a cluster IP or into the service
		// CIDRs found no service port (kube-proxy rejects the one, drops
		// the other) and must not leave by the default route.
		unknown = append(unknown, ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIn{V6: v6, Set: ClusterIPsSet(v6)}},
			Verdict: ruleset.Reject{V6: v6}})
		if len(ruleset.PrefixRanges(p.cfg.ServiceCIDRs, nil, v6)) > 0 {
			unknown = append(unknown, ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIn{V6: v6, Set: ServiceCIDRsSet(v6)}},
				Verdict: ruleset.Drop{}})
		}
		post = append(post, ruleset.Rule{Matches: []ruleset.Match{ruleset.CtStatusDNAT{}, ruleset.AddrPairIn{V6: v6, Set: HairpinSet(v6)}},
			Verdict: ruleset.MasqueradeFullyRandom{}})
	}
	dispatch = append(dispatch, jump(ChainSticky))
	for _, v6 := range []bool{false, true} {
		if p.inUse[famIndex(v6)] == 0 {
			continue
		}
		for _, n := range p.classNumbers(p.classes[famIndex(v6)]) {
			dispatch = append(dispatch, dnatSlotRules(ClassSet(n, v6), n, v6, EndpointsMap)...)
		}
	}
	p.t.PutChain(&ruleset.Chain{Name: ChainDispatch, Comment: "service addresses: masquerade mark, then DNAT to an endpoint", Rules: dispatch})
	nat(ChainNATPostrouting, "postrouting", prioSrcNAT, post...)
	for _, c := range []struct {
		name, hook string
		rules      []ruleset.Rule
	}{
		{ChainFilterInput, "input", reject},
		{ChainFilterForward, "forward", slices.Concat(reject, unknown)},
		{ChainFilterOutput, "output", slices.Concat(reject, unknown)},
	} {
		p.t.PutChain(&ruleset.Chain{Name: c.name, Base: &ruleset.Hook{Hook: c.hook, Type: "filter", Priority: prioFilter}, Rules: c.rules})
	}

	// loadBalancerSourceRanges: before DNAT (the filter hooks at -110, as
	// kube-proxy), connections to a restricted load-balancer IP from
	// outside its ranges are dropped, from outside and from the node alike.
	var firewall []ruleset.Rule
	for _, vk := range slices.SortedFunc(maps.Keys(p.firewall), vipKey.compare) {
		v6 := vk.Addr.Is6()
		firewall = append(firewall, ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIs{V6: v6, Addr: vk.Addr},
			ruleset.DPort{Proto: uint8(vk.Proto), First: vk.Port}, ruleset.AddrIn{V6: v6, Src: true, Not: true, Set: p.firewall[vk]}},
			Verdict: ruleset.Drop{}})
	}
	for _, c := range []struct{ name, hook string }{{ChainFirewallPre, "prerouting"}, {ChainFirewallOutput, "output"}} {
		if len(firewall) == 0 {
			p.t.DeleteChain(c.name)
			continue
		}
		p.t.PutChain(&ruleset.Chain{Name: c.name, Base: &ruleset.Hook{Hook: c.hook, Type: "filter", Priority: prioFirewall},
			Comment: "load-balancer IPs with source ranges: drop other clients", Rules: firewall})
	}

	var sticky []ruleset.Rule
	for _, vk := range slices.SortedFunc(maps.Keys(p.sticky), vipKey.compare) {
		s := p.sticky[vk]
		v6 := vk.Addr.Is6()
		sticky = append(sticky, ruleset.Rule{
			Matches: []ruleset.Match{ruleset.AddrIs{V6: v6, Addr: vk.Addr}, ruleset.DPort{Proto: uint8(vk.Proto), First: vk.Port}},
			Verdict: ruleset.DNATSticky{V6: v6, Map: s.affinityMap, Port: s.port}})
	}
	p.t.PutChain(&ruleset.Chain{Name: ChainSticky, Comment: "service addresses with session affinity: clients they remember", Rules: sticky})

	var remember []ruleset.Rule
	for _, ak := range slices.SortedFunc(maps.Keys(p.affinity), compareAffinityKey) {
		remember = append(remember, ruleset.Rule{Matches: []ruleset.Match{ruleset.CtStatusDNAT{},
			ruleset.DestPortIn{V6: ak.v6, Set: AffinityEndpointsSet(ak.port, ak.v6, ak.timeout)},
			ruleset.RememberClient{V6: ak.v6, Map: AffinityMap(ak.port, ak.v6, ak.timeout)}}})
	}
	p.t.PutChain(&ruleset.Chain{Name: ChainRemember, Comment: "connections to endpoints of services with session affinity: remember the client", Rules: remember})
}

// classNumbers are the endpoint counts whose class sets exist, ascending:
// the precreated ones and those of classes (counts per endpoint count).
func (p *Planner) classNumbers(classes map[int]int) []int {
	var out []int
	for n := 1; n <= PrecreatedClasses; n++ {
		out = append(out, n)
	}
	for n := range classes {
		if n > PrecreatedClasses {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func compareAffinityKey(a, b affinityKey) int {
	if c := a.port.Compare(b.port); c != 0 {
		return c
	}
	if a.v6 != b.v6 {
		if a.v6 {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.timeout, b.timeout)
}

// dnatSlotRules translates the addresses of class set class (n endpoints
// each) through the endpoint map of their protocol: one rule per protocol.
func dnatSlotRules(class string, n int, v6 bool, endpointsMap func(model.Protocol, bool) string) []ruleset.Rule {
	rules := make([]ruleset.Rule, 0, len(Protocols))
	for _, proto := range Protocols {
		rules = append(rules, ruleset.Rule{
			Matches: []ruleset.Match{ruleset.DestPortIn{V6: v6, Proto: uint8(proto), Set: class}},
			Verdict: ruleset.DNATSlot{V6: v6, Proto: uint8(proto), Slots: uint32(n), Map: endpointsMap(proto, v6)}})
	}
	return rules
}
