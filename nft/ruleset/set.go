package ruleset

// Set is a named set, or a verdict map when Verdict is set.
type Set struct {
	Name     string
	Comment  string
	Type     KeyType
	Interval bool
	Verdict  bool // a map from the key to a verdict (jump) instead of a set
	// Elements count how many reasons a planner has for each element; an
	// element is programmed while its count is positive.
	Elements map[Element]int
}

// SameDef reports whether two sets have the same definition, whatever their
// elements.
func (s *Set) SameDef(o *Set) bool {
	return s.Name == o.Name && s.Comment == o.Comment && s.Type == o.Type &&
		s.Interval == o.Interval && s.Verdict == o.Verdict
}

// Has reports whether e is in the set.
func (s *Set) Has(e Element) bool { return s.Elements[e] > 0 }
