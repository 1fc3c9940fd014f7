package ruleset

// ReplaceElements makes set hold exactly want, for a set one planner fills
// whole from a single source (an interval set of prefixes, say): elements in
// both stay, the others are removed or added. The set must exist.
func (t *Table) ReplaceElements(set string, want []Element) {
	s := t.Sets[set]
	keep := make(map[Element]bool, len(want))
	for _, e := range want {
		keep[e] = true
	}
	var drop []Element
	for e := range s.Elements.All() {
		if !keep[e] {
			drop = append(drop, e)
		}
	}
	for _, e := range drop {
		t.RemoveElement(set, e)
	}
	for _, e := range want {
		if s.Elements.Count(e) == 0 {
			t.AddElement(set, e)
		}
	}
}
