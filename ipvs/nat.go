package ipvs

import (
	"cmp"
	"context"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// NATConfig configures the IPVS proxy's share of nfrouter's nftables table.
type NATConfig struct {
	PlanConfig
	// MasqueradeAll (--masquerade-all) masquerades every connection to a
	// virtual service, not only those from outside the cluster CIDRs.
	MasqueradeAll bool
	// ClusterCIDRs (--cluster-cidr) are the cluster's pod networks: traffic
	// from them keeps its source. Empty: the pod CIDRs of all Node objects.
	ClusterCIDRs []netip.Prefix
	// HairpinAll (--hairpin-mode) masquerades a pod's connection to itself
	// through any service, not only through services with the
	// kube-router.io/service.hairpin annotation.
	HairpinAll bool
	// ServiceCIDRs (--service-cluster-ip-range) are the ranges cluster IPs
	// are allocated from: traffic to an address in them that is on no
	// virtual service is dropped. Empty: not known, not dropped.
	ServiceCIDRs []netip.Prefix
	// Log receives the warning that no cluster CIDR is known; nil:
	// slog.Default().
	Log *slog.Logger
}

// NAT is what the IPVS proxy needs from nftables, the helpers kube-router
// built from iptables and ipsets: the service-address sets, masquerading of
// traffic to virtual services, hairpin, and dropping traffic to a service
// address on a port no service has. It is a part of the nft backend (it has
// the nft.Part method set) and pure: it writes desired objects into a
// ruleset.Table and touches no kernel state. nat_rules.go lays out the
// chains.
//
// It plans virtual services with the proxy's own pure function
// (planServicePort), one service port at a time, and keeps only the set
// elements each port contributed: a changed service port or endpoint list
// costs the elements that differ, never a chain rewrite. Schedulers and
// address conflicts between ports do not matter here: elements are counted
// per contributor, so two ports wanting one address share its element.
type NAT struct {
	cfg NATConfig
	t   *ruleset.Table

	// byPort holds the elements each service port contributes, sorted and
	// without duplicates.
	byPort map[model.ServicePortKey][]natElem
	// services counts the virtual services of each family (fam index).
	services [2]int
	// fams are the families whose objects are in the table: those that have
	// a virtual service.
	fams [2]bool
	// firewall holds the source-range drop rules each service port's
	// restricted load-balancer IPs need (loadBalancerSourceRanges), sorted;
	// sourceSets are the source sets defined.
	firewall   map[model.ServicePortKey][]fwRule
	sourceSets map[string]bool
	// noCIDRs: no cluster CIDR is known, so every connection to a virtual
	// service is masqueraded (warned once, and when it is over).
	noCIDRs bool
}

// fwRule drops connections to one restricted load-balancer IP, protocol and
// port from clients outside its service port's source set.
type fwRule struct {
	vs  VSKey
	set string
}

// natElem is one element of one of our sets.
type natElem struct {
	set string
	e   ruleset.Element
}

func (a natElem) compare(b natElem) int { return cmp.Or(cmp.Compare(a.set, b.set), a.e.Compare(b.e)) }

// NewNAT returns the NAT part, writing into t; it plans nothing until the
// first Plan.
func NewNAT(t *ruleset.Table, cfg NATConfig) *NAT {
	return &NAT{cfg: cfg, t: t, byPort: map[model.ServicePortKey][]natElem{},
		firewall: map[model.ServicePortKey][]fwRule{}, sourceSets: map[string]bool{}}
}

// Name names the part in logs.
func (n *NAT) Name() string { return "ipvs-nat" }

// Kinds are the model kinds NAT reads: service ports and endpoints for the
// virtual services, nodes for NodePort addresses and the cluster CIDRs.
func (n *NAT) Kinds() model.Kinds {
	return model.KindServicePorts | model.KindEndpoints | model.KindNodes
}

// Plan brings NAT's objects in line with state; changes names what changed,
// or is Full.
func (n *NAT) Plan(ctx context.Context, state *model.State, changes *model.Changes) {
	full := changes == nil || changes.Full
	type update struct {
		key       model.ServicePortKey
		old, want []natElem
	}
	var updates []update
	services := n.services
	fwChanged := false
	for _, k := range affectedPorts(state, changes, n.cfg.NodeName, n.byPort) {
		old, want := n.byPort[k], n.elemsOf(k, state)
		if fw := n.firewallOf(k, state); !slices.Equal(fw, n.firewall[k]) {
			fwChanged = true
			if len(fw) == 0 {
				delete(n.firewall, k)
			} else {
				n.firewall[k] = fw
			}
		}
		if slices.Equal(old, want) {
			continue
		}
		for i, d := range [2]int{-1, 1} {
			for _, e := range [][]natElem{old, want}[i] {
				if e.set == servicesSet(false) || e.set == servicesSet(true) {
					services[famOf(e.e.Addr)] += d
				}
			}
		}
		updates = append(updates, update{k, old, want})
	}

	// Objects of a family that comes are there before its elements; those
	// of a family that goes, after its elements left.
	fams := [2]bool{services[0] > 0, services[1] > 0}
	famsChanged := fams != n.fams
	n.putSets(fams, n.fams)
	wantSets := n.wantSourceSets()
	for name, v6 := range wantSets {
		if !n.sourceSets[name] {
			n.t.PutSet(ruleset.Set{Name: name, Type: ruleset.AddrKey(v6), Interval: true,
				Comment: "clients loadBalancerSourceRanges allow to reach the service port's load-balancer IPs"})
			n.sourceSets[name] = true
		}
	}
	for _, u := range updates {
		n.replace(u.old, u.want)
		if len(u.want) == 0 {
			delete(n.byPort, u.key)
		} else {
			n.byPort[u.key] = u.want
		}
	}
	n.services = services
	n.deleteSets(n.fams, fams)
	for name := range n.sourceSets {
		if _, ok := wantSets[name]; !ok {
			n.t.DeleteSet(name)
			delete(n.sourceSets, name)
		}
	}
	n.fams = fams
	if full || famsChanged {
		n.putChains()
	}
	if full || fwChanged || famsChanged {
		n.putFirewall()
	}
	if full || famsChanged || len(changes.Nodes) > 0 {
		n.planClusterCIDRs(state)
	}
	if full || len(changes.Nodes) > 0 {
		n.warnNoClusterCIDRs(ctx, state)
	}
}

// NoClusterCIDRs reports that no cluster CIDR is known (no --cluster-cidr,
// no node with a pod CIDR) while pods' connections should keep their
// address: every connection to a virtual service is masqueraded then.
func (n *NAT) NoClusterCIDRs() bool { return n.noCIDRs }

// warnNoClusterCIDRs says so when NoClusterCIDRs changes.
func (n *NAT) warnNoClusterCIDRs(ctx context.Context, state *model.State) {
	no := !n.cfg.MasqueradeAll && len(model.ClusterCIDRs(n.cfg.ClusterCIDRs, state.Nodes)) == 0
	if no == n.noCIDRs {
		return
	}
	n.noCIDRs = no
	log := n.cfg.Log
	if log == nil {
		log = slog.Default()
	}
	if no {
		log.WarnContext(ctx, "no cluster CIDR known (no --cluster-cidr, no node with a pod CIDR): connections from pods to services are masqueraded too", "part", n.Name())
	} else {
		log.InfoContext(ctx, "cluster CIDRs known again: pods reach services with their own address", "part", n.Name())
	}
}

// elemsOf returns the elements service port k contributes in state, sorted
// and without duplicates.
func (n *NAT) elemsOf(k model.ServicePortKey, state *model.State) []natElem {
	sp := state.ServicePorts.Get(k)
	if sp == nil {
		return nil
	}
	eps := state.Endpoints.Get(k)
	var out []natElem
	var lbFams [2]bool
	for _, vs := range planServicePort(sp, eps, state.Nodes.Get(n.cfg.NodeName), n.cfg.PlanConfig, defaultSched) {
		v6 := vs.Addr.Is6()
		if vs.Kind == KindLoadBalancer {
			lbFams[famOf(vs.Addr)] = true
		}
		out = append(out, natElem{servicesSet(v6), ruleset.Element{Addr: vs.Addr, Proto: uint8(vs.Proto), Port: vs.Port}})
		if vs.Kind.OnDummy() {
			out = append(out, natElem{vipsSet(v6), ruleset.Element{Addr: vs.Addr}})
		}
		if vs.Kind.External() && !n.cfg.MasqueradeAll {
			set := externalSet(v6)
			if vs.Local {
				set = localExternalSet(v6)
			}
			out = append(out, natElem{set, ruleset.Element{Addr: vs.Addr, Proto: uint8(vs.Proto), Port: vs.Port}})
		}
		if n.cfg.HairpinAll || sp.Options.Hairpin {
			out = append(out, hairpinElems(&vs, eps, n.cfg.NodeName)...)
		}
	}
	if len(sp.LoadBalancerSourceRanges) > 0 {
		for _, v6 := range famList(lbFams) {
			for _, e := range ruleset.PrefixRanges(sp.LoadBalancerSourceRanges, nil, v6) {
				out = append(out, natElem{sourcesSet(k, v6), e})
			}
		}
	}
	slices.SortFunc(out, natElem.compare)
	return slices.Compact(out)
}

// firewallOf returns the drop rules of service port k's restricted
// load-balancer IPs, sorted.
func (n *NAT) firewallOf(k model.ServicePortKey, state *model.State) []fwRule {
	sp := state.ServicePorts.Get(k)
	if sp == nil || len(sp.LoadBalancerSourceRanges) == 0 {
		return nil
	}
	var out []fwRule
	for _, vs := range planServicePort(sp, state.Endpoints.Get(k), state.Nodes.Get(n.cfg.NodeName), n.cfg.PlanConfig, defaultSched) {
		if vs.Kind == KindLoadBalancer {
			out = append(out, fwRule{vs.VSKey, sourcesSet(k, vs.Addr.Is6())})
		}
	}
	slices.SortFunc(out, func(a, b fwRule) int { return a.vs.Compare(b.vs) })
	return slices.Compact(out)
}

// wantSourceSets are the source sets the firewall rules name, with their
// family.
func (n *NAT) wantSourceSets() map[string]bool {
	out := map[string]bool{}
	for _, rules := range n.firewall {
		for _, r := range rules {
			out[r.set] = r.vs.Addr.Is6()
		}
	}
	return out
}

// replace swaps a port's old elements for want, touching only those that
// differ. Both are sorted and without duplicates.
func (n *NAT) replace(old, want []natElem) {
	i, j := 0, 0
	for i < len(old) || j < len(want) {
		switch {
		case j == len(want) || (i < len(old) && old[i].compare(want[j]) < 0):
			n.t.RemoveElement(old[i].set, old[i].e)
			i++
		case i == len(old) || old[i].compare(want[j]) > 0:
			n.t.AddElement(want[j].set, want[j].e)
			j++
		default:
			i, j = i+1, j+1
		}
	}
}

// planClusterCIDRs fills the cluster-CIDR sets of the families in use from
// --cluster-cidr or, without it, from the pod CIDRs of every node.
func (n *NAT) planClusterCIDRs(state *model.State) {
	if n.cfg.MasqueradeAll {
		return
	}
	cidrs := model.ClusterCIDRs(n.cfg.ClusterCIDRs, state.Nodes)
	for _, v6 := range famList(n.fams) {
		n.t.ReplaceElements(clusterCIDRsSet(v6), ruleset.PrefixRanges(cidrs, nil, v6))
	}
}

// famOf is the index of a's family in per-family arrays: 0 IPv4, 1 IPv6.
func famOf(a netip.Addr) int {
	if a.Is6() {
		return 1
	}
	return 0
}

// famList lists the families of fams as "is IPv6" flags, IPv4 first.
func famList(fams [2]bool) []bool {
	var out []bool
	for i, v6 := range []bool{false, true} {
		if fams[i] {
			out = append(out, v6)
		}
	}
	return out
}
