package ruleset

import (
	"net/netip"
	"slices"
)

// PrefixRanges returns the addresses of include less those of exclude as sorted,
// disjoint, non-adjacent inclusive ranges of one address family (v6 selects
// which), ready to be interval-set elements. It is how an ipBlock with except
// becomes one set instead of a set and an exception set.
func PrefixRanges(include, exclude []netip.Prefix, v6 bool) []Element {
	var in []Element
	for _, p := range include {
		if p.Addr().Is6() == v6 {
			in = append(in, Range(p.Masked().Addr(), lastOf(p)))
		}
	}
	merged := MergeRanges(in)
	// Cut out each exception.
	for _, p := range exclude {
		if p.Addr().Is6() != v6 {
			continue
		}
		lo, hi := p.Masked().Addr(), lastOf(p)
		var out []Element
		for _, s := range merged {
			if hi.Less(s.Addr) || s.End.Less(lo) {
				out = append(out, s)
				continue
			}
			if s.Addr.Less(lo) {
				out = append(out, Range(s.Addr, lo.Prev()))
			}
			if hi.Less(s.End) {
				out = append(out, Range(hi.Next(), s.End))
			}
		}
		merged = out
	}
	return merged
}

// MergeRanges sorts interval elements and merges overlapping and adjacent ones,
// as an interval set needs them.
func MergeRanges(in []Element) []Element {
	in = slices.Clone(in)
	slices.SortFunc(in, func(a, b Element) int { return a.Addr.Compare(b.Addr) })
	var merged []Element
	for _, s := range in {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if next := last.End.Next(); !next.IsValid() || s.Addr.Compare(next) <= 0 {
				if s.End.Compare(last.End) > 0 {
					last.End = s.End
				}
				continue
			}
		}
		merged = append(merged, s)
	}
	return merged
}
