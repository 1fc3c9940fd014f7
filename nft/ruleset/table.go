package ruleset

import (
	"maps"
	"slices"
)

// Table is the desired content of one nftables table, written by planners and
// read by the applier. It is not safe for concurrent use.
type Table struct {
	Family string // "inet"
	Name   string
	Chains map[string]*Chain
	Sets   map[string]*Set

	// dirtyChains and dirtySets journal the names changed since TakeDirty;
	// dirtyElems the elements of each dirty set that came or went, or nil
	// when the set itself was (re)defined and all of it counts as changed.
	dirtyChains, dirtySets map[string]struct{}
	dirtyElems             map[string]map[Element]struct{}
	// flushes are dynamic sets whose elements are to be dropped.
	flushes map[string]struct{}
}

// NewTable returns an empty table.
func NewTable(family, name string) *Table {
	return &Table{Family: family, Name: name, Chains: map[string]*Chain{}, Sets: map[string]*Set{},
		dirtyChains: map[string]struct{}{}, dirtySets: map[string]struct{}{}, dirtyElems: map[string]map[Element]struct{}{},
		flushes: map[string]struct{}{}}
}

// PutChain sets a chain, noting a change only if it differs.
func (t *Table) PutChain(c *Chain) {
	if old := t.Chains[c.Name]; old.Equal(c) {
		return
	}
	t.Chains[c.Name] = c
	t.dirtyChains[c.Name] = struct{}{}
}

// DeleteChain removes a chain.
func (t *Table) DeleteChain(name string) {
	if _, ok := t.Chains[name]; ok {
		delete(t.Chains, name)
		t.dirtyChains[name] = struct{}{}
	}
}

// PutSet defines a set; an existing set with the same definition keeps its
// elements.
func (t *Table) PutSet(s Set) {
	if old := t.Sets[s.Name]; old != nil && old.SameDef(&s) {
		return
	}
	s.Elements = ElementCounts{}
	t.Sets[s.Name] = &s
	t.dirtySets[s.Name] = struct{}{}
	t.dirtyElems[s.Name] = nil
}

// DeleteSet removes a set.
func (t *Table) DeleteSet(name string) {
	if _, ok := t.Sets[name]; ok {
		delete(t.Sets, name)
		t.dirtySets[name] = struct{}{}
		t.dirtyElems[name] = nil
	}
}

// AddElement adds one reason for e to be in set; the set must exist.
func (t *Table) AddElement(set string, e Element) {
	if t.Sets[set].Elements.add(e) == 1 {
		t.elementChanged(set, e)
	}
}

// RemoveElement removes one reason for e to be in set; a missing set or element
// is ignored.
func (t *Table) RemoveElement(set string, e Element) {
	s := t.Sets[set]
	if s == nil || s.Elements.Count(e) == 0 {
		return
	}
	if s.Elements.remove(e) == 0 {
		t.elementChanged(set, e)
	}
}

// FlushSet asks the applier to drop the elements of a dynamic set: the ones
// the packet path added, which no planner knows. A missing set is ignored.
func (t *Table) FlushSet(name string) {
	if s := t.Sets[name]; s != nil && s.Dynamic {
		t.flushes[name] = struct{}{}
	}
}

// TakeFlushes returns the dynamic sets FlushSet named since the last call,
// sorted, and clears the list.
func (t *Table) TakeFlushes() []string {
	out := slices.Sorted(maps.Keys(t.flushes))
	clear(t.flushes)
	return out
}

// elementChanged journals that e came into or left set.
func (t *Table) elementChanged(set string, e Element) {
	m, ok := t.dirtyElems[set]
	if ok && m == nil {
		return // the whole set is dirty already
	}
	if m == nil {
		m = map[Element]struct{}{}
		t.dirtyElems[set] = m
	}
	m[e] = struct{}{}
	t.dirtySets[set] = struct{}{}
}

// TakeDirty returns the names of chains and sets changed since the last call,
// sorted, and the elements that came into or left each changed set (nil for
// a set that was defined, redefined or deleted: diff all of it), and clears
// the journal.
func (t *Table) TakeDirty() (chains, sets []string, elems map[string]map[Element]struct{}) {
	chains = slices.Sorted(maps.Keys(t.dirtyChains))
	sets = slices.Sorted(maps.Keys(t.dirtySets))
	elems = t.dirtyElems
	clear(t.dirtyChains)
	clear(t.dirtySets)
	t.dirtyElems = map[string]map[Element]struct{}{}
	return chains, sets, elems
}
