package svcproxy

import (
	"fmt"
	"net/netip"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

func famIndex(v6 bool) int {
	if v6 {
		return 1
	}
	return 0
}

// add writes what one owned address contributes to the table: the objects
// it is the first to need, then its elements.
func (p *Planner) add(vk vipKey, pv programmedVIP) {
	v6 := vk.Addr.Is6()
	p.useFamily(v6, +1)
	if n := len(pv.plan.Endpoints); n > 0 {
		p.useClass(n, v6, +1)
	}
	if n := len(pv.plan.Internal); n > 0 {
		p.useInternalClass(n, v6, +1)
	}
	if pv.plan.sticky() {
		p.useAffinity(affinityKey{pv.owner, v6, pv.plan.Affinity}, +1)
	}
	if pv.plan.Restricted {
		p.useSources(sourcesKey{pv.owner, v6}, pv.plan.Sources, +1)
	}
	for _, se := range elements(vk, pv) {
		p.t.AddElement(se.set, se.e)
	}
}

// remove takes back what add wrote: the elements, then the objects it was
// the last to need.
func (p *Planner) remove(vk vipKey, pv programmedVIP) {
	v6 := vk.Addr.Is6()
	for _, se := range elements(vk, pv) {
		p.t.RemoveElement(se.set, se.e)
	}
	if pv.plan.sticky() {
		p.useAffinity(affinityKey{pv.owner, v6, pv.plan.Affinity}, -1)
	}
	if pv.plan.Restricted {
		p.useSources(sourcesKey{pv.owner, v6}, nil, -1)
	}
	if n := len(pv.plan.Endpoints); n > 0 {
		p.useClass(n, v6, -1)
	}
	if n := len(pv.plan.Internal); n > 0 {
		p.useInternalClass(n, v6, -1)
	}
	p.useFamily(v6, -1)
}

// setElem is one element of a named set or map.
type setElem struct {
	set string
	e   ruleset.Element
}

// elements lists the set and map elements one owned address brings.
func elements(vk vipKey, pv programmedVIP) []setElem {
	v6 := vk.Addr.Is6()
	key := ruleset.Element{Addr: vk.Addr, Proto: uint8(vk.Proto), Port: vk.Port}
	plan := pv.plan
	// Sized up front: a cold start lists 130,000 elements at 10,000
	// services, and growing each list from one copied them several times.
	n := 4 + len(plan.Internal) + len(plan.Endpoints)
	for _, e := range plan.Endpoints {
		if e.Local {
			n++
		}
	}
	if plan.sticky() {
		n += len(plan.Endpoints)
	}
	out := make([]setElem, 0, n)
	if plan.ClusterIP {
		out = append(out, setElem{ClusterIPsSet(v6), ruleset.Element{Addr: vk.Addr}})
	}
	switch plan.Masquerade {
	case masqueradeOutside:
		out = append(out, setElem{MasqueradeSet(v6), key})
	case masqueradeAlways:
		out = append(out, setElem{MasqueradeAlwaysSet(v6), key})
	case masqueradeNever:
		if plan.Internal != nil {
			out = append(out, setElem{LocalExternalSet(v6), key})
		}
	}
	if n := len(plan.Internal); n > 0 {
		out = append(out, setElem{InternalClassSet(n, v6), key})
		for i, e := range plan.Internal {
			out = append(out, setElem{InternalEndpointsMap(vk.Proto, v6), slotElement(key, i, e)})
		}
	}
	if len(plan.Endpoints) == 0 {
		if len(plan.Internal) > 0 {
			// Policy Local with endpoints on other nodes only: clients
			// outside the cluster are dropped, as kube-proxy does (a load
			// balancer's health check already took this node out).
			return append(out, setElem{NoLocalEndpointsSet(v6), key})
		}
		return append(out, setElem{NoEndpointsSet(v6), key})
	}
	out = append(out, setElem{ClassSet(len(plan.Endpoints), v6), key})
	for i, e := range plan.Endpoints {
		out = append(out, setElem{EndpointsMap(vk.Proto, v6), slotElement(key, i, e)})
		if e.Local {
			out = append(out, setElem{HairpinSet(v6), ruleset.Element{Addr: e.Addr(), Peer: e.Addr()}})
		}
	}
	if plan.sticky() {
		set := AffinityEndpointsSet(pv.owner, v6, plan.Affinity)
		for _, e := range plan.Endpoints {
			out = append(out, setElem{set, ruleset.Element{Addr: e.Addr(), Proto: uint8(vk.Proto), Port: e.Port()}})
		}
	}
	return out
}

func slotElement(key ruleset.Element, slot int, e endpoint) ruleset.Element {
	key.Slot = uint16(slot)
	key.Target = e.AddrPort()
	return key
}

// useFamily counts an address of a family in or out, making or deleting the
// family's objects when it is the first or last one.
func (p *Planner) useFamily(v6 bool, d int) {
	i := famIndex(v6)
	before := p.inUse[i]
	p.inUse[i] += d
	switch {
	case before == 0 && p.inUse[i] > 0:
		for _, s := range familySets(v6) {
			p.t.PutSet(s)
		}
		for n := 1; n <= PrecreatedClasses; n++ {
			p.t.PutSet(classSet(n, v6))
			p.t.PutSet(internalClassSet(n, v6))
		}
		for _, e := range p.cidrs[i] {
			p.t.AddElement(ClusterCIDRsSet(v6), e)
		}
		if ranges := ruleset.PrefixRanges(p.cfg.ServiceCIDRs, nil, v6); len(ranges) > 0 {
			p.t.PutSet(ruleset.Set{Name: ServiceCIDRsSet(v6), Type: ruleset.AddrKey(v6), Interval: true,
				Comment: "the service CIDRs (--service-cluster-ip-range): addresses no service has are dropped"})
			p.t.ReplaceElements(ServiceCIDRsSet(v6), ranges)
		}
		p.rulesDirty = true
	case before > 0 && p.inUse[i] == 0:
		for _, s := range familySets(v6) {
			p.t.DeleteSet(s.Name)
		}
		for n := 1; n <= PrecreatedClasses; n++ {
			p.t.DeleteSet(ClassSet(n, v6))
			p.t.DeleteSet(InternalClassSet(n, v6))
		}
		p.t.DeleteSet(ServiceCIDRsSet(v6))
		p.rulesDirty = true
	}
}

// useClass counts an address with n endpoints in or out.
func (p *Planner) useClass(n int, v6 bool, d int) {
	p.countClass(p.classes[famIndex(v6)], n, d, func() ruleset.Set { return classSet(n, v6) })
}

// useInternalClass is useClass for the in-cluster view of external
// addresses of traffic policy Local.
func (p *Planner) useInternalClass(n int, v6 bool, d int) {
	p.countClass(p.internalClasses[famIndex(v6)], n, d, func() ruleset.Set { return internalClassSet(n, v6) })
}

// countClass counts an address with n endpoints in or out of classes;
// classes beyond the precreated ones exist (as set) while some address is
// in them.
func (p *Planner) countClass(classes map[int]int, n, d int, set func() ruleset.Set) {
	classes[n] += d
	if classes[n] == 0 {
		delete(classes, n)
	}
	if n <= PrecreatedClasses {
		return
	}
	switch {
	case d > 0 && classes[n] == 1:
		p.t.PutSet(set())
		p.rulesDirty = true
	case d < 0 && classes[n] == 0:
		p.t.DeleteSet(set().Name)
		p.rulesDirty = true
	}
}

func internalClassSet(n int, v6 bool) ruleset.Set {
	return ruleset.Set{Name: InternalClassSet(n, v6), Type: ruleset.AddrProtoPortKey(v6),
		Comment: fmt.Sprintf("policy Local address . protocol . port with %d in-cluster endpoints, in slots 0-%d of service-internal-endpoints-<protocol>-%s", n, n-1, fam(v6))}
}

// useAffinity counts a sticky address of one service port and family in or
// out; the port's affinity objects exist while it has some.
func (p *Planner) useAffinity(ak affinityKey, d int) {
	p.affinity[ak] += d
	switch {
	case d > 0 && p.affinity[ak] == 1:
		p.putAffinitySets(ak)
		p.rulesDirty = true
	case d < 0 && p.affinity[ak] == 0:
		delete(p.affinity, ak)
		p.t.DeleteSet(AffinityMap(ak.port, ak.v6, ak.timeout))
		p.t.DeleteSet(AffinityEndpointsSet(ak.port, ak.v6, ak.timeout))
		p.rulesDirty = true
	}
}

// useSources counts a restricted load-balancer IP of one service port and
// family in or out; the port's source set exists while it has some, and
// holds the ranges the last one counted in brought (all of a port's
// addresses of a family share them).
func (p *Planner) useSources(sk sourcesKey, ranges []netip.Prefix, d int) {
	name := SourceRangesSet(sk.port, sk.v6)
	p.sources[sk] += d
	switch {
	case d > 0:
		if p.sources[sk] == 1 {
			p.t.PutSet(ruleset.Set{Name: name, Type: ruleset.AddrKey(sk.v6), Interval: true,
				Comment: "clients loadBalancerSourceRanges allow to reach the service port's load-balancer IPs"})
		}
		p.t.ReplaceElements(name, ruleset.PrefixRanges(ranges, nil, sk.v6))
	case p.sources[sk] == 0:
		delete(p.sources, sk)
		p.t.DeleteSet(name)
	}
}

func classSet(n int, v6 bool) ruleset.Set {
	return ruleset.Set{Name: ClassSet(n, v6), Type: ruleset.AddrProtoPortKey(v6),
		Comment: fmt.Sprintf("service address . protocol . port with %d endpoints, in slots 0-%d of service-endpoints-<protocol>-%s", n, n-1, fam(v6))}
}

func familySets(v6 bool) []ruleset.Set {
	addr, pair, slot, target := ruleset.Addr4, ruleset.AddrPair4, ruleset.EndpointSlot4, ruleset.AddrPort4
	if v6 {
		addr, pair, slot, target = ruleset.Addr6, ruleset.AddrPair6, ruleset.EndpointSlot6, ruleset.AddrPort6
	}
	var sets []ruleset.Set
	for _, proto := range Protocols {
		sets = append(sets,
			ruleset.Set{Name: EndpointsMap(proto, v6), Type: slot, Data: target, DataProto: uint8(proto),
				Comment: proto.String() + " service address . protocol . port . slot to endpoint address . port"},
			ruleset.Set{Name: InternalEndpointsMap(proto, v6), Type: slot, Data: target, DataProto: uint8(proto),
				Comment: "policy Local " + proto.String() + " address . protocol . port . slot to in-cluster endpoint"})
	}
	return append(sets, []ruleset.Set{
		{Name: LocalExternalSet(v6), Type: ruleset.AddrProtoPortKey(v6), Comment: "external service address . protocol . port of traffic policy Local: the node's own connections are masqueraded"},
		{Name: NoEndpointsSet(v6), Type: ruleset.AddrProtoPortKey(v6), Comment: "service address . protocol . port without endpoints: rejected"},
		{Name: NoLocalEndpointsSet(v6), Type: ruleset.AddrProtoPortKey(v6), Comment: "policy Local address . protocol . port with endpoints on other nodes only: dropped"},
		{Name: MasqueradeSet(v6), Type: ruleset.AddrProtoPortKey(v6), Comment: "service address . protocol . port masqueraded from outside the cluster"},
		{Name: MasqueradeAlwaysSet(v6), Type: ruleset.AddrProtoPortKey(v6), Comment: "external service address . protocol . port of traffic policy Cluster: always masqueraded"},
		{Name: ClusterCIDRsSet(v6), Type: addr, Interval: true, Comment: "the cluster's pod CIDRs"},
		{Name: HairpinSet(v6), Type: pair, Comment: "local endpoint . itself: a pod reaching itself through a service"},
		{Name: ClusterIPsSet(v6), Type: addr, Comment: "cluster IPs: ports no service has are rejected"},
	}...)
}

// putAffinitySets makes the dynamic map and the endpoint set of one
// service port's session affinity.
func (p *Planner) putAffinitySets(ak affinityKey) {
	addr, kt := ruleset.AddrKey(ak.v6), ruleset.AddrProtoPortKey(ak.v6)
	timeout := ak.timeout
	p.t.PutSet(ruleset.Set{Name: AffinityMap(ak.port, ak.v6, timeout), Type: addr, Data: addr,
		Dynamic: true, Size: affinitySize, Timeout: timeout,
		Comment: "client to the endpoint it sticks to, for " + ak.port.String()})
	p.t.PutSet(ruleset.Set{Name: AffinityEndpointsSet(ak.port, ak.v6, timeout), Type: kt,
		Comment: "endpoints of " + ak.port.String() + " whose new connections refresh affinity"})
}

// affinitySize bounds the clients one service port remembers, as nft does
// for a dynamic set declared without a size.
const affinitySize = 65535
