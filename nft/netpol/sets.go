package netpol

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// setKind says what a shared set holds.
type setKind uint8

const (
	podsSet  setKind = iota // addresses of the pods some peers select
	portsSet                // address . protocol . port of pods' named ports
	cidrSet                 // ipBlock ranges, fixed
)

// setSpec describes a set, or an IPv4/IPv6 pair of sets, that policies share.
// Its content is a pure function of its key, so every policy rule (or policy
// target) with the same canonical key uses the same kernel set: the kernel
// looks sets up by walking a list, so their number drives the cost of every
// message that names one.
type setSpec struct {
	key     string
	kind    setKind
	names   [2]string // [v4, v6]; "" when that family has no set
	comment string

	// podsSet: the peers, whose pod selectors apply in the namespaces their
	// namespace selectors match, or in policyNS when they have none. ns is
	// that one namespace when no peer has a namespace selector.
	peers    []model.Peer
	policyNS string
	ns       string

	named []model.PolicyPort // portsSet: ports given by name, sorted

	static []ruleset.Element // cidrSet: the ranges
}

// podsSpec is the set of pods that any of peers (selector peers of a policy
// in namespace policyNS) selects, with a set for each of fams.
func podsSpec(policyNS string, peers []model.Peer, fams families) *setSpec {
	s := &setSpec{kind: podsSet, peers: peers, policyNS: policyNS, ns: policyNS}
	var keys, descs []string
	for _, p := range peers {
		pods := "all pods"
		if p.PodSelector != nil && !p.PodSelector.Empty() {
			pods = "pods " + p.PodSelector.String()
		}
		if p.NamespaceSelector == nil {
			keys = append(keys, fmt.Sprintf("ns=%q pods=%q", policyNS, selString(p.PodSelector)))
			descs = append(descs, fmt.Sprintf("%s of namespace %s", pods, policyNS))
			continue
		}
		s.ns = ""
		keys = append(keys, fmt.Sprintf("nssel=%q pods=%q", p.NamespaceSelector.String(), selString(p.PodSelector)))
		nss := "all namespaces"
		if !p.NamespaceSelector.Empty() {
			nss = "namespaces " + p.NamespaceSelector.String()
		}
		descs = append(descs, fmt.Sprintf("%s of %s", pods, nss))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	slices.Sort(descs)
	descs = slices.Compact(descs)
	s.key = "pods " + strings.Join(keys, " ")
	for _, v6 := range fams.list() {
		s.names[idx(v6)] = podsSetName(s.ns, s.key, v6)
	}
	s.comment = comment(strings.Join(descs, "; "))
	return s
}

// selString is the canonical form of a selector; nil selects everything,
// as the empty selector does.
func selString(s *model.Selector) string {
	if s == nil {
		return ""
	}
	return s.String()
}

// portsSpec is the set of named ports of all pods for the given names, with a
// set for each of fams.
func portsSpec(named []model.PolicyPort, fams families) *setSpec {
	named = slices.Clone(named)
	slices.SortFunc(named, func(a, b model.PolicyPort) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.Protocol) - int(b.Protocol)
	})
	named = slices.CompactFunc(named, func(a, b model.PolicyPort) bool { return a.Name == b.Name && a.Protocol == b.Protocol })
	var parts []string
	for _, po := range named {
		parts = append(parts, po.Name+"."+strings.ToLower(po.Protocol.String()))
	}
	s := &setSpec{kind: portsSet, named: named, key: "ports " + strings.Join(parts, "/")}
	for _, v6 := range fams.list() {
		s.names[idx(v6)] = portsSetName(parts, v6)
	}
	s.comment = comment("named ports " + strings.Join(parts, ", ") + " of all pods")
	return s
}

// cidrSpec is an interval set of one family holding ranges (merged, sorted).
func cidrSpec(ranges []ruleset.Element, v6 bool) *setSpec {
	var parts []string
	for _, e := range ranges {
		parts = append(parts, e.Text())
	}
	s := &setSpec{kind: cidrSet, static: ranges, key: "cidr" + fam(v6) + " " + strings.Join(parts, ",")}
	s.names[idx(v6)] = hashedName("cidr"+fam(v6)+"/", s.key)
	s.comment = comment("ipBlocks " + strings.Join(parts, ", "))
	return s
}

// defs returns the set definitions.
func (s *setSpec) defs() []ruleset.Set {
	var out []ruleset.Set
	for _, v6 := range []bool{false, true} {
		name := s.names[idx(v6)]
		if name == "" {
			continue
		}
		d := ruleset.Set{Name: name, Type: ruleset.AddrKey(v6), Comment: s.comment}
		switch s.kind {
		case portsSet:
			d.Type = ruleset.AddrProtoPortKey(v6)
		case cidrSet:
			d.Interval = true
		}
		out = append(out, d)
	}
	return out
}

// mayMatchNS reports whether pods of namespace name (labels from ns, nil if
// unknown) can be in the set.
func (s *setSpec) mayMatchNS(name string, ns *model.Namespace) bool {
	switch s.kind {
	case portsSet:
		return true
	case cidrSet:
		return false
	}
	if s.ns != "" {
		return name == s.ns
	}
	for _, p := range s.peers {
		if nsMatches(p, s.policyNS, name, ns) {
			return true
		}
	}
	return false
}

func nsMatches(p model.Peer, policyNS, name string, ns *model.Namespace) bool {
	if p.NamespaceSelector == nil {
		return name == policyNS
	}
	var labels map[string]string
	if ns != nil {
		labels = ns.Labels
	}
	return p.NamespaceSelector.Matches(labels)
}

// elements returns what pod (in namespace ns, nil if unknown) brings to the
// set.
func (s *setSpec) elements(pod *model.Pod, ns *model.Namespace) []setElem {
	var out []setElem
	switch s.kind {
	case podsSet:
		if !slices.ContainsFunc(s.peers, func(p model.Peer) bool {
			return nsMatches(p, s.policyNS, pod.Namespace, ns) && (p.PodSelector == nil || p.PodSelector.Matches(pod.Labels))
		}) {
			return nil
		}
		for _, ip := range pod.IPs {
			out = append(out, setElem{s.names[idx(ip.Is6())], ruleset.Element{Addr: ip}})
		}
	case portsSet:
		for _, po := range s.named {
			port, ok := pod.NamedPort(po.Name, po.Protocol)
			if !ok {
				continue
			}
			for _, ip := range pod.IPs {
				out = append(out, setElem{s.names[idx(ip.Is6())], ruleset.Element{Addr: ip, Proto: uint8(po.Protocol), Port: port}})
			}
		}
	}
	return out
}

// comment keeps a set comment within what the kernel stores
// (NFT_USERDATA_MAXLEN, 256 bytes with its header).
func comment(s string) string {
	const maxComment = 200
	if len(s) <= maxComment {
		return s
	}
	return s[:maxComment-3] + "..."
}
