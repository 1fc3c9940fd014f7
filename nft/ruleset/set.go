package ruleset

import "time"

// Set is a named set, or a map when Verdict or Data is set.
type Set struct {
	Name     string
	Comment  string
	Type     KeyType
	Interval bool
	Verdict  bool    // a map from the key to a verdict (jump) instead of a set
	Data     KeyType // a map from the key to data of this type (AddrPort4, …)
	// DataProto, for data of an address and a port, names the transport
	// protocol whose port it is. Maps read by `dnat … map` rules are one per
	// protocol: nft 1.0.6 cannot check such a rule against a map it reads
	// from the kernel whose data is typeof `th dport` ("conflicting
	// protocols specified: ip vs. th"), so an operator could not reload the
	// node's listing.
	DataProto uint8
	// Dynamic sets are filled by the packet path (`update @set`); planners
	// add no elements, and the applier neither diffs nor repairs them, only
	// flushes them on request (Table.FlushSet). Size bounds them; Timeout is
	// how long an element lives after its last update.
	Dynamic bool
	Size    uint32
	Timeout time.Duration
	// Elements count how many reasons a planner has for each element; an
	// element is programmed while its count is positive.
	Elements ElementCounts
}

// SameDef reports whether two sets have the same definition, whatever their
// elements.
func (s *Set) SameDef(o *Set) bool {
	return s.Name == o.Name && s.Comment == o.Comment && s.Type == o.Type &&
		s.Interval == o.Interval && s.Verdict == o.Verdict && s.Data == o.Data && s.DataProto == o.DataProto &&
		s.Dynamic == o.Dynamic && s.Size == o.Size && s.Timeout == o.Timeout
}

// DataTypeof is how nft declares the map's data when the key is declared
// with typeof: "" when it names no expressions.
func (s *Set) DataTypeof() string {
	if s.Type.Typeof() == "" {
		return ""
	}
	return s.Data.typeofProto(s.DataProto)
}

// IsMap reports whether the set maps its keys to something.
func (s *Set) IsMap() bool { return s.Verdict || s.Data != 0 }

// Has reports whether e is in the set.
func (s *Set) Has(e Element) bool { return s.Elements.Count(e) > 0 }
