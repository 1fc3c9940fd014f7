package ipvs

import (
	"slices"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// The chains and sets of the NAT part, per family in use (v4 shown):
//
//	set ipvs-services-v4       addr . proto . port of every virtual service
//	set ipvs-vips-v4           service addresses on kube-dummy-if (not node IPs)
//	set ipvs-hairpin-v4        endpoint . endpoint pairs of local endpoints of hairpin services
//	set ipvs-cluster-cidrs-v4  the cluster's pod networks (not with --masquerade-all)
//	set ipvs-local-external-v4 NodePorts, external and LB IPs of traffic policy Local (not with --masquerade-all)
//	set ipvs-external-v4       NodePorts, external and LB IPs of traffic policy Cluster (not with --masquerade-all)
//
//	chain ipvs-mark (nat prerouting, dstnat)
//	  ip daddr . meta l4proto . th dport @ipvs-local-external-v4 accept
//	  ip daddr . meta l4proto . th dport @ipvs-external-v4 meta mark set meta mark | 0x00004000
//	  ip saddr != @ipvs-cluster-cidrs-v4 ip daddr . meta l4proto . th dport @ipvs-services-v4 meta mark set meta mark | 0x00004000
//	chain ipvs-postrouting (nat postrouting, srcnat)
//	  meta mark & 0x00004000 == 0x00004000 meta mark set meta mark ^ 0x00004000 masquerade fully-random
//	  ip saddr @ipvs-vips-v4 masquerade fully-random
//	  ip saddr . ip daddr @ipvs-hairpin-v4 masquerade fully-random
//	chain ipvs-input (filter input, filter)
//	  ip daddr . meta l4proto . th dport @ipvs-services-v4 accept
//	  ip daddr @ipvs-vips-v4 ct state established,related accept
//	  ip daddr @ipvs-vips-v4 icmp type echo-request accept
//	  ip daddr @ipvs-vips-v4 drop
//
// The mark is set where the destination is still the virtual service: IPVS
// rewrites it at LOCAL_IN, after nat prerouting, and the mark survives its
// forwarding to postrouting, where the connection is masqueraded (kube-proxy's
// IPVS mode does the same with iptables; nat chains see only the first
// packet of a connection, so the mark need not be kept).
//
// Connections to an external address (NodePort, external or LB IP) of
// traffic policy Cluster are masqueraded whatever their source, pods
// included, as kube-proxy does: the endpoint may be on a third node, whose
// reply must come back through the node that translated the connection.
//
// Connections that arrive for a virtual service of external traffic policy
// Local keep their client's address (the policy's purpose, as in
// kube-proxy): only local endpoints serve them, so replies pass this node
// anyway.
//
// The node's own connections to a service address on kube-dummy-if leave
// with that address as their source (the kernel's choice for a local
// destination), which no reply could find: they are masqueraded by that
// source. kube-proxy marks the node's connections in a nat output chain
// instead; its other ones come from the node's own addresses, which replies
// find without masquerading, so one postrouting rule does the job of a
// chain on the output hook.
//
// ipvs-input runs before IPVS takes the packet (IPVS hooks LOCAL_IN at
// priority 98): an accept there only ends our chain, so the accepts just keep
// service ports, replies and pings away from the drop at the end. NodePort
// addresses are the node's own: they are never in ipvs-vips, so nothing else
// sent to the node is dropped.

// loadBalancerSourceRanges, per restricted load-balancer IP, before IPVS
// and DNAT (filter prerouting and output, priority -110, as kube-proxy):
//
//	set ipvs-lb-sources-v4/<ns>/<name>/<proto>[/<port>]  the allowed clients (interval)
//	chain ipvs-firewall, ipvs-firewall-output
//	  ip daddr <lb ip> tcp dport <port> ip saddr != @ipvs-lb-sources-v4/… drop
//
// With --service-cluster-ip-range, traffic to an address in it that no
// virtual service has is dropped, as kube-proxy does (it would otherwise
// leave by the default route). Addresses with a virtual service are on
// kube-dummy-if, so their traffic is delivered locally and never forwarded;
// the node's own reaches the output hook after IPVS translated it (IPVS
// hooks LOCAL_OUT at priority -98), so what is left there in the range has
// no virtual service, but for a service address on a port none has, which
// ipvs-input drops on delivery:
//
//	set ipvs-service-cidrs-v4  the service CIDRs (interval)
//	chain ipvs-unallocated-forward (filter forward), ipvs-unallocated-output (filter output)
//	  ip daddr @ipvs-service-cidrs-v4 ip daddr != @ipvs-vips-v4 drop
//
// Chain names.
const (
	natChainMark              = "ipvs-mark"
	natChainPostrouting       = "ipvs-postrouting"
	natChainInput             = "ipvs-input"
	natChainFirewall          = "ipvs-firewall"
	natChainFirewallOutput    = "ipvs-firewall-output"
	natChainUnallocated       = "ipvs-unallocated-forward"
	natChainUnallocatedOutput = "ipvs-unallocated-output"
)

// sourcesSet names the set of clients loadBalancerSourceRanges allow for a
// service port and family.
func sourcesSet(k model.ServicePortKey, v6 bool) string {
	id := k.Namespace + "/" + k.Name + "/" + k.Protocol.String()
	if k.Port != "" {
		id += "/" + k.Port
	}
	return "ipvs-lb-sources-" + fam(v6) + "/" + id
}

// putFirewall writes the source-range drop rules, or deletes their chains
// when no load-balancer IP is restricted.
func (n *NAT) putFirewall() {
	var rules []fwRule
	for _, rs := range n.firewall {
		rules = append(rules, rs...)
	}
	slices.SortFunc(rules, func(a, b fwRule) int { return a.vs.Compare(b.vs) })
	var out []ruleset.Rule
	for _, r := range rules {
		v6 := r.vs.Addr.Is6()
		out = append(out, ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIs{V6: v6, Addr: r.vs.Addr},
			ruleset.DPort{Proto: uint8(r.vs.Proto), First: r.vs.Port}, ruleset.AddrIn{V6: v6, Src: true, Not: true, Set: r.set}},
			Verdict: ruleset.Drop{}})
	}
	for _, c := range []struct{ name, hook string }{{natChainFirewall, "prerouting"}, {natChainFirewallOutput, "output"}} {
		if len(out) == 0 {
			n.t.DeleteChain(c.name)
			continue
		}
		n.t.PutChain(&ruleset.Chain{Name: c.name, Base: &ruleset.Hook{Hook: c.hook, Type: "filter", Priority: -110},
			Rules: out, Comment: "IPVS: load-balancer IPs with source ranges: drop other clients"})
	}
}

func fam(v6 bool) string {
	if v6 {
		return "v6"
	}
	return "v4"
}

func servicesSet(v6 bool) string      { return "ipvs-services-" + fam(v6) }
func vipsSet(v6 bool) string          { return "ipvs-vips-" + fam(v6) }
func hairpinSet(v6 bool) string       { return "ipvs-hairpin-" + fam(v6) }
func clusterCIDRsSet(v6 bool) string  { return "ipvs-cluster-cidrs-" + fam(v6) }
func localExternalSet(v6 bool) string { return "ipvs-local-external-" + fam(v6) }
func externalSet(v6 bool) string      { return "ipvs-external-" + fam(v6) }
func serviceCIDRsSet(v6 bool) string  { return "ipvs-service-cidrs-" + fam(v6) }

// natSets are the set definitions of one family.
func (n *NAT) natSets(v6 bool) []ruleset.Set {
	svc := ruleset.AddrProtoPortKey(v6)
	sets := []ruleset.Set{
		{Name: servicesSet(v6), Type: svc, Comment: "IPVS virtual services"},
		{Name: vipsSet(v6), Type: ruleset.AddrKey(v6), Comment: "IPVS service addresses on kube-dummy-if"},
		hairpinSetDef(v6),
	}
	if !n.cfg.MasqueradeAll {
		sets = append(sets,
			ruleset.Set{Name: clusterCIDRsSet(v6), Type: ruleset.AddrKey(v6), Interval: true,
				Comment: "cluster pod networks: connections from them keep their source"},
			ruleset.Set{Name: localExternalSet(v6), Type: svc,
				Comment: "IPVS virtual services of external traffic policy Local: clients keep their source"},
			ruleset.Set{Name: externalSet(v6), Type: svc,
				Comment: "IPVS NodePorts, external and LB IPs of traffic policy Cluster: always masqueraded"})
	}
	if n.serviceCIDRs(v6) != nil {
		sets = append(sets, ruleset.Set{Name: serviceCIDRsSet(v6), Type: ruleset.AddrKey(v6), Interval: true,
			Comment: "service CIDRs: addresses in them on no virtual service are dropped"})
	}
	return sets
}

// serviceCIDRs are the elements of the service-CIDR set of a family, nil
// when --service-cluster-ip-range has none of it.
func (n *NAT) serviceCIDRs(v6 bool) []ruleset.Element {
	return ruleset.PrefixRanges(n.cfg.ServiceCIDRs, nil, v6)
}

// putSets defines the sets of the families in fams that are not in had.
func (n *NAT) putSets(fams, had [2]bool) {
	for i, v6 := range []bool{false, true} {
		if fams[i] && !had[i] {
			for _, s := range n.natSets(v6) {
				n.t.PutSet(s)
			}
			if ranges := n.serviceCIDRs(v6); ranges != nil {
				n.t.ReplaceElements(serviceCIDRsSet(v6), ranges)
			}
		}
	}
}

// deleteSets deletes the sets of the families in had that are not in fams.
func (n *NAT) deleteSets(had, fams [2]bool) {
	for i, v6 := range []bool{false, true} {
		if had[i] && !fams[i] {
			for _, s := range n.natSets(v6) {
				n.t.DeleteSet(s.Name)
			}
		}
	}
}

// putChains writes the chains for the families in use, or deletes them
// when there is none.
func (n *NAT) putChains() {
	fams := famList(n.fams)
	if len(fams) == 0 {
		for _, c := range []string{natChainMark, natChainPostrouting, natChainInput, natChainUnallocated, natChainUnallocatedOutput} {
			n.t.DeleteChain(c)
		}
		return
	}
	var unallocated []ruleset.Rule
	var mark []ruleset.Rule
	post := []ruleset.Rule{{Matches: []ruleset.Match{
		ruleset.MarkHas{Bits: ruleset.MasqueradeMark}, ruleset.MarkClear{Bits: ruleset.MasqueradeMark},
	}, Verdict: ruleset.MasqueradeFullyRandom{}}}
	var input []ruleset.Rule
	for _, v6 := range fams {
		var m []ruleset.Match
		if !n.cfg.MasqueradeAll {
			// Only local endpoints serve these, so replies come back
			// through this node without masquerading.
			mark = append(mark, ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: v6, Set: localExternalSet(v6)}},
				Verdict: ruleset.Accept{}})
			mark = append(mark, ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: v6, Set: externalSet(v6)},
				ruleset.MarkSet{Bits: ruleset.MasqueradeMark}}})
			m = append(m, ruleset.AddrIn{V6: v6, Src: true, Not: true, Set: clusterCIDRsSet(v6)})
		}
		m = append(m, ruleset.DestPortIn{V6: v6, Set: servicesSet(v6)}, ruleset.MarkSet{Bits: ruleset.MasqueradeMark})
		mark = append(mark, ruleset.Rule{Matches: m})

		post = append(post, ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIn{V6: v6, Src: true, Set: vipsSet(v6)}},
			Verdict: ruleset.MasqueradeFullyRandom{}})
		post = append(post, hairpinRule(v6))

		vip := ruleset.AddrIn{V6: v6, Set: vipsSet(v6)}
		var echo ruleset.Match = ruleset.ICMPv4Type{Type: 8, Name: "echo-request"}
		if v6 {
			echo = ruleset.ICMPv6Type{Type: 128, Name: "echo-request"}
		}
		input = append(input,
			ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: v6, Set: servicesSet(v6)}}, Verdict: ruleset.Accept{}},
			ruleset.Rule{Matches: []ruleset.Match{vip, ruleset.CtEstablished{}}, Verdict: ruleset.Accept{}},
			ruleset.Rule{Matches: []ruleset.Match{vip, echo}, Verdict: ruleset.Accept{}},
			ruleset.Rule{Matches: []ruleset.Match{vip}, Verdict: ruleset.Drop{}})
		if n.serviceCIDRs(v6) != nil {
			unallocated = append(unallocated, ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIn{V6: v6, Set: serviceCIDRsSet(v6)},
				ruleset.AddrIn{V6: v6, Not: true, Set: vipsSet(v6)}}, Verdict: ruleset.Drop{}})
		}
	}
	for _, c := range []struct{ name, hook string }{{natChainUnallocated, "forward"}, {natChainUnallocatedOutput, "output"}} {
		if len(unallocated) == 0 {
			n.t.DeleteChain(c.name)
			continue
		}
		n.t.PutChain(&ruleset.Chain{Name: c.name, Base: &ruleset.Hook{Hook: c.hook, Type: "filter"},
			Rules: unallocated, Comment: "IPVS: drop traffic to service CIDR addresses no virtual service has"})
	}
	n.t.PutChain(&ruleset.Chain{Name: natChainMark, Base: &ruleset.Hook{Hook: "prerouting", Type: "nat", Priority: -100},
		Rules: mark, Comment: "IPVS: mark connections to services for masquerading"})
	n.t.PutChain(&ruleset.Chain{Name: natChainPostrouting, Base: &ruleset.Hook{Hook: "postrouting", Type: "nat", Priority: 100},
		Rules: post, Comment: "IPVS: masquerade marked, node-originated and hairpin connections"})
	n.t.PutChain(&ruleset.Chain{Name: natChainInput, Base: &ruleset.Hook{Hook: "input", Type: "filter"},
		Rules: input, Comment: "IPVS: drop what service addresses receive on ports no service has"})
}
