package bgp

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/nfrouter/nfrouter/model"
)

// AdvertiseFlags are the global switches of what a node originates.
type AdvertiseFlags struct {
	PodCIDR, ClusterIP, ExternalIP, LoadBalancerIP bool
}

// AdvertDelta is what to tell the speaker: paths to originate and to
// withdraw, each sorted.
type AdvertDelta struct {
	Add, Withdraw []netip.Prefix
}

// Empty reports whether the delta changes nothing.
func (d AdvertDelta) Empty() bool { return len(d.Add) == 0 && len(d.Withdraw) == 0 }

// advertSource is what made us originate a prefix: the node's pod CIDRs (the
// zero key) or one service port. Ports of a service share its VIPs, and
// services may share external IPs, so prefixes are counted per source and a
// path is withdrawn only when no source wants it any more.
type advertSource struct {
	pods bool
	port model.ServicePortKey
}

// Advertiser plans the paths this node originates. It keeps each source's
// prefixes so that an update computes only the changed sources: one changed
// service yields one path added or withdrawn. Not safe for concurrent use.
type Advertiser struct {
	node     string
	flags    AdvertiseFlags
	bySource map[advertSource][]netip.Prefix
	count    map[netip.Prefix]int
}

// NewAdvertiser returns an advertiser for node that has advertised nothing.
func NewAdvertiser(node string, flags AdvertiseFlags) *Advertiser {
	return &Advertiser{node: node, flags: flags, bySource: map[advertSource][]netip.Prefix{}, count: map[netip.Prefix]int{}}
}

// Prefixes returns every prefix currently advertised, sorted.
func (a *Advertiser) Prefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(a.count))
	for p := range a.count {
		out = append(out, p)
	}
	slices.SortFunc(out, comparePrefix)
	return out
}

// Update recomputes the sources that changed (every source when
// changes.Full) and returns the resulting delta, with the malformed service
// annotations it ignored.
func (a *Advertiser) Update(state *model.State, changes *model.Changes) (AdvertDelta, []Problem) {
	var problems []Problem
	adds, withdraws := map[netip.Prefix]bool{}, map[netip.Prefix]bool{}
	set := func(src advertSource, want []netip.Prefix) {
		old := a.bySource[src]
		for _, p := range want {
			if slices.Contains(old, p) {
				continue
			}
			a.count[p]++
			if a.count[p] == 1 {
				if withdraws[p] {
					delete(withdraws, p)
				} else {
					adds[p] = true
				}
			}
		}
		for _, p := range old {
			if slices.Contains(want, p) {
				continue
			}
			a.count[p]--
			if a.count[p] == 0 {
				delete(a.count, p)
				if adds[p] {
					delete(adds, p)
				} else {
					withdraws[p] = true
				}
			}
		}
		if len(want) == 0 {
			delete(a.bySource, src)
		} else {
			a.bySource[src] = want
		}
	}

	var pods []netip.Prefix
	if n := state.Nodes.Get(a.node); n != nil && a.flags.PodCIDR {
		pods = dedupPrefixes(n.PodCIDRs)
	}
	set(advertSource{pods: true}, pods)

	keys := map[model.ServicePortKey]bool{}
	if changes.Full {
		for k := range state.ServicePorts.All() {
			keys[k] = true
		}
		for src := range a.bySource {
			if !src.pods {
				keys[src.port] = true
			}
		}
	} else {
		for k := range changes.ServicePorts {
			keys[k] = true
		}
		for k := range changes.Endpoints {
			keys[k] = true
		}
	}
	for k := range keys {
		want, p := servicePrefixes(a.node, a.flags, state.ServicePorts.Get(k), state.Endpoints.Get(k))
		problems = append(problems, p...)
		set(advertSource{port: k}, want)
	}
	return AdvertDelta{Add: sortedKeys(adds), Withdraw: sortedKeys(withdraws)}, problems
}

// servicePrefixes returns the VIPs of one service port that this node
// advertises: each kind behind its flag, which the service's
// kube-router.io/service.advertise.* annotation overrides; a VIP whose
// traffic policy is Local only where the port has a local serving endpoint.
func servicePrefixes(node string, flags AdvertiseFlags, sp *model.ServicePort, eps model.Endpoints) ([]netip.Prefix, []Problem) {
	if sp == nil {
		return nil, nil
	}
	var problems []Problem
	decide := func(flag bool, value, annotation string) bool {
		switch value {
		case "":
			return flag
		case "true":
			return true
		case "false":
			return false
		}
		problems = append(problems, Problem{Node: node, Reason: "InvalidAnnotation",
			Message: fmt.Sprintf("service %s: annotation %s=%q ignored: want true or false", sp.Key.Service(), annotation, value)})
		return flag
	}
	local := false
	for _, e := range eps {
		if e.Node == node && (e.Ready || (e.Serving && !e.Terminating)) {
			local = true
			break
		}
	}
	var out []netip.Prefix
	add := func(addrs []netip.Addr) {
		for _, a := range addrs {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	o := sp.Options
	if decide(flags.ClusterIP, o.AdvertiseClusterIP, model.AnnotationAdvertiseClusterIP) && (local || !(sp.InternalTrafficLocal || o.Local)) {
		add(sp.ClusterIPs)
	}
	externalOK := local || !(sp.ExternalTrafficLocal || o.Local)
	if decide(flags.ExternalIP, o.AdvertiseExternalIP, model.AnnotationAdvertiseExternalIP) && externalOK {
		add(sp.ExternalIPs)
	}
	if decide(flags.LoadBalancerIP, o.AdvertiseLoadBalancerIP, model.AnnotationAdvertiseLoadBalancerIP) && externalOK {
		add(sp.LoadBalancerIPs)
	}
	return dedupPrefixes(out), problems
}

func dedupPrefixes(in []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(in))
	for _, p := range in {
		p = p.Masked()
		if p.IsValid() && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, comparePrefix)
	return out
}

func sortedKeys(m map[netip.Prefix]bool) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, comparePrefix)
	return out
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
