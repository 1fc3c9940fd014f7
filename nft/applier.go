package nft

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Stats describe one transaction.
type Stats struct {
	Messages        int            // netlink messages in the batch, without begin and end
	Bytes           int            // bytes sent
	ByType          map[string]int // messages per type: "newsetelem", "newrule", …
	ElementsAdded   int
	ElementsRemoved int
	ChainsRewritten int // existing chains flushed and refilled
}

// applier makes the kernel's copy of one table match a ruleset.Table. It keeps
// what it programmed (sets with their elements, chains with a key per rule) so
// that an incremental apply diffs only the objects the table journalled as
// changed, and sends nothing when nothing changed.
type applier struct {
	family nftables.TableFamily
	name   string
	nsFd   int
	tr     *transport
	prog   programmed
	// stale are chains already flushed whose deletion waits for the next
	// apply: map elements that jumped to them were deleted in the same batch,
	// and kernels before 6.2 release such chain references only after the
	// transaction (EBUSY otherwise; see kube-proxy's nftables proxier).
	stale map[string]bool
}

type programmed struct {
	table  bool
	sets   map[string]*progSet
	chains map[string]*progChain
}

type progSet struct {
	def ruleset.Set // without elements
	// elems are the elements programmed, as hashes: the planner's table
	// holds the elements themselves, and a diff only asks "is it there?".
	elems elemHashes
	// kernel are the elements a read-back found, kept until the next apply
	// has diffed them: deleting an element takes its value.
	kernel []ruleset.Element
	// unknown says the kernel's elements of an interval set differ from what
	// we would write; they are rewritten whole.
	unknown bool
}

type progChain struct {
	base *ruleset.Hook
	keys []string // one per rule; see ruleKey
}

func newProgrammed() programmed {
	return programmed{sets: map[string]*progSet{}, chains: map[string]*progChain{}}
}

func newApplier(family nftables.TableFamily, name string, nsFd int) (*applier, error) {
	tr, err := openTransport(nsFd)
	if err != nil {
		return nil, err
	}
	return &applier{family: family, name: name, nsFd: nsFd, tr: tr, prog: newProgrammed(), stale: map[string]bool{}}, nil
}

func (a *applier) close() error { return a.tr.close() }

// apply programs the differences between desired and what is in the kernel.
// With full it first reads our table back from the kernel and diffs every
// object; otherwise only the objects desired journalled as changed. A failed
// apply leaves the kernel as it was (one batch) and the cache unreliable: the
// caller must make the next apply full.
func (a *applier) apply(desired *ruleset.Table, full bool) (Stats, error) {
	chainNames, setNames, changed := desired.TakeDirty()
	flushes := desired.TakeFlushes()
	if full {
		changed = nil // diff every element
		prog, reset, err := a.readBack(desired)
		if err != nil {
			return Stats{}, err
		}
		a.prog = prog
		if reset {
			return a.reset(desired)
		}
		chainNames = union(desired.Chains, prog.chains)
		setNames = union(desired.Sets, prog.sets)
	}
	b := newBatch(a.family, a.name)
	if !a.prog.table {
		b.addTable()
	}
	// Definitions first: new sets and chains exist before anything uses them.
	for _, name := range setNames {
		d, p := desired.Sets[name], a.prog.sets[name]
		if d != nil && p != nil && !p.def.SameDef(d) {
			return a.reset(desired)
		}
		if d != nil && p == nil {
			b.addSet(d)
		}
	}
	for _, name := range chainNames {
		d, p := desired.Chains[name], a.prog.chains[name]
		if d != nil && p != nil && !d.Base.Equal(p.base) {
			return a.reset(desired)
		}
		if d != nil && p == nil {
			b.addChain(d)
		}
	}
	// Elements.
	type elemDelta struct {
		add, del []ruleset.Element
		flushed  bool
	}
	deltas := map[string]elemDelta{}
	jumpsRemoved := map[string]bool{}
	// jumpsToAny: a verdict map was rewritten whole, so any chain removed
	// in this batch may still have been a jump target.
	jumpsToAny := false
	for _, name := range setNames {
		d, p := desired.Sets[name], a.prog.sets[name]
		if d == nil || d.Dynamic {
			continue
		}
		if d.Interval {
			want := ruleset.SortedElements(d)
			if p != nil && !p.unknown && sameElems(p.elems, want) {
				continue
			}
			if p != nil {
				b.flushSet(d)
			}
			b.elements(d, want, false)
			continue
		}
		var have elemHashes
		if p != nil {
			have = p.elems
		}
		var delta elemDelta
		diff := func(e ruleset.Element) {
			switch want := d.Has(e); {
			case want && !have.has(e):
				delta.add = append(delta.add, e)
			case !want && have.has(e):
				delta.del = append(delta.del, e)
				if e.Jump != "" {
					jumpsRemoved[e.Jump] = true
				}
			}
		}
		els, journalled := changed[name]
		switch {
		case p == nil:
			// A new set: all of it is added, in order; nothing to look
			// up in a record that does not exist.
			delta.add = ruleset.SortedElements(d)
		case journalled && els != nil:
			// Only the journalled elements can differ from what we programmed.
			for e := range els {
				diff(e)
			}
		case p.kernel != nil || len(p.elems) == 0:
			// A set just read back: every element is diffed, those the
			// kernel holds by the values the read-back decoded.
			for e := range d.Elements.All() {
				diff(e)
			}
			for _, e := range p.kernel {
				diff(e)
			}
		default:
			// The set was replaced in the table while the kernel holds
			// elements known only by hash: rewrite it whole, atomically.
			b.flushSet(d)
			delta = elemDelta{add: ruleset.SortedElements(d), flushed: true}
			if d.Verdict {
				jumpsToAny = true
			}
		}
		if p != nil && !delta.flushed { // the others came sorted
			slices.SortFunc(delta.add, ruleset.Element.Compare)
			slices.SortFunc(delta.del, ruleset.Element.Compare)
		}
		b.elements(d, delta.del, true)
		b.elements(d, delta.add, false)
		if p != nil && !delta.flushed {
			deltas[name] = delta
		}
		// A new or rewritten set is recorded from the table after the
		// commit: its list of additions need not live that long.
	}
	for _, name := range flushes {
		if d, p := desired.Sets[name], a.prog.sets[name]; d != nil && p != nil {
			b.flushSet(d)
		}
	}
	// Rules: a chain whose rules changed is flushed and refilled.
	keys := map[string][]string{}
	for _, name := range chainNames {
		d, p := desired.Chains[name], a.prog.chains[name]
		if d == nil {
			continue
		}
		k := chainKeys(a.family, d)
		keys[name] = k
		if p != nil && slices.Equal(p.keys, k) {
			continue
		}
		if p != nil {
			if len(p.keys) > 0 {
				b.flushChain(name)
			}
			b.stats.ChainsRewritten++
		}
		for _, r := range d.Rules {
			b.addRule(name, r)
		}
	}
	// Removals last, once nothing refers to them any more.
	var removed, deferred []string
	for _, name := range chainNames {
		if desired.Chains[name] == nil && a.prog.chains[name] != nil {
			if len(a.prog.chains[name].keys) > 0 {
				b.flushChain(name)
			}
			if jumpsRemoved[name] || jumpsToAny {
				deferred = append(deferred, name)
			} else {
				removed = append(removed, name)
			}
		}
	}
	for name := range a.stale {
		if desired.Chains[name] == nil && a.prog.chains[name] != nil && !slices.Contains(deferred, name) && !slices.Contains(removed, name) {
			removed = append(removed, name)
		}
	}
	slices.Sort(removed)
	for _, name := range removed {
		b.delChain(name)
	}
	for _, name := range setNames {
		if desired.Sets[name] == nil && a.prog.sets[name] != nil {
			b.delSet(&a.prog.sets[name].def)
		}
	}
	b.finish()
	if b.err != nil {
		return b.stats, b.err
	}
	if b.empty() {
		return b.stats, nil
	}
	n, err := a.tr.commit(b.msgs, b.what)
	b.stats.Bytes = n
	if err != nil {
		return b.stats, fmt.Errorf("commit transaction of %d messages: %w", b.stats.Messages, err)
	}
	// Record what the kernel now holds.
	a.prog.table = true
	for _, name := range setNames {
		d := desired.Sets[name]
		if d == nil {
			delete(a.prog.sets, name)
			continue
		}
		p := a.prog.sets[name]
		delta, ok := deltas[name]
		if p == nil || d.Interval || !ok {
			p = &progSet{def: defOf(d), elems: elemSet(d)}
			a.prog.sets[name] = p
			continue
		}
		for _, e := range delta.del {
			p.elems.del(e)
		}
		for _, e := range delta.add {
			p.elems.add(e)
		}
		p.kernel = nil
	}
	for name, k := range keys {
		a.prog.chains[name] = &progChain{base: desired.Chains[name].Base, keys: k}
	}
	for _, name := range removed {
		delete(a.prog.chains, name)
		delete(a.stale, name)
	}
	for _, name := range deferred {
		a.prog.chains[name].keys = nil
		a.stale[name] = true
	}
	return b.stats, nil
}

// reset replaces the whole table in one batch: the way out when the kernel
// holds one of our objects with another definition than we want (someone made
// it by hand, or an older version of nfrouter did), which cannot be changed in
// place.
func (a *applier) reset(desired *ruleset.Table) (Stats, error) {
	b := newBatch(a.family, a.name)
	if a.prog.table {
		b.delTable()
	}
	b.addTable()
	for _, name := range slices.Sorted(maps.Keys(desired.Sets)) {
		s := desired.Sets[name]
		b.addSet(s)
		b.elements(s, ruleset.SortedElements(s), false)
	}
	for _, name := range slices.Sorted(maps.Keys(desired.Chains)) {
		b.addChain(desired.Chains[name])
	}
	for _, name := range slices.Sorted(maps.Keys(desired.Chains)) {
		for _, r := range desired.Chains[name].Rules {
			b.addRule(name, r)
		}
	}
	b.finish()
	if b.err != nil {
		return b.stats, b.err
	}
	n, err := a.tr.commit(b.msgs, b.what)
	b.stats.Bytes = n
	if err != nil {
		return b.stats, fmt.Errorf("commit replacement of table %s (%d messages): %w", a.name, b.stats.Messages, err)
	}
	a.prog = newProgrammed()
	a.prog.table = true
	for name, s := range desired.Sets {
		a.prog.sets[name] = &progSet{def: defOf(s), elems: elemSet(s)}
	}
	for name, c := range desired.Chains {
		a.prog.chains[name] = &progChain{base: c.Base, keys: chainKeys(a.family, c)}
	}
	clear(a.stale)
	return b.stats, nil
}

// ruleKey identifies a rule by its serialized expressions, so that rules we
// wrote and rules read back from the kernel compare equal. Set IDs only matter
// within the transaction that creates a set and are not read back; counter
// values are whatever traffic made them.
func ruleKey(family nftables.TableFamily, exprs []expr.Any) string {
	var sb strings.Builder
	for _, e := range exprs {
		switch x := e.(type) {
		case *expr.Lookup:
			c := *x
			c.SetID = 0
			c.SourceRegister = canonicalReg(c.SourceRegister)
			c.DestRegister = canonicalReg(c.DestRegister)
			e = &c
		case *expr.Meta:
			c := *x
			c.Register = canonicalReg(c.Register)
			e = &c
		case *expr.Payload:
			c := *x
			c.DestRegister = canonicalReg(c.DestRegister)
			e = &c
		case *expr.Numgen:
			c := *x
			c.Register = canonicalReg(c.Register)
			e = &c
		case *expr.Immediate:
			c := *x
			c.Register = canonicalReg(c.Register)
			e = &c
		case *expr.NAT:
			c := *x
			c.RegAddrMin, c.RegAddrMax = canonicalReg(c.RegAddrMin), canonicalReg(c.RegAddrMax)
			c.RegProtoMin, c.RegProtoMax = canonicalReg(c.RegProtoMin), canonicalReg(c.RegProtoMax)
			e = &c
		case *expr.Counter:
			e = &expr.Counter{} // the values are the packet path's, not ours
		case *expr.Dynset:
			c := *x
			c.SetID = 0
			c.SrcRegKey, c.SrcRegData = canonicalReg(c.SrcRegKey), canonicalReg(c.SrcRegData)
			e = &c
		}
		b, err := expr.Marshal(byte(family), e)
		if err != nil {
			fmt.Fprintf(&sb, "!%T:%v", e, err)
			continue
		}
		fmt.Fprintf(&sb, "%x;", b)
	}
	return sb.String()
}

// canonicalReg names a register the way the kernel dumps it: a 32-bit
// register that starts a 128-bit one (NFT_REG32_04 = 12) as that one
// (NFT_REG_2 = 2).
func canonicalReg(r uint32) uint32 {
	if r >= 8 && r < 24 && (r-8)%4 == 0 {
		return (r-8)/4 + 1
	}
	return r
}

func chainKeys(family nftables.TableFamily, c *ruleset.Chain) []string {
	k := make([]string, len(c.Rules))
	for i, r := range c.Rules {
		k[i] = ruleKey(family, r.Exprs())
	}
	return k
}

func defOf(s *ruleset.Set) ruleset.Set {
	d := *s
	d.Elements = ruleset.ElementCounts{}
	return d
}

func elemSet(s *ruleset.Set) elemHashes {
	m := make(elemHashes, s.Elements.Len())
	for e := range s.Elements.All() {
		m.add(e)
	}
	return m
}

func sameElems(m elemHashes, els []ruleset.Element) bool {
	if len(m) != len(els) {
		return false
	}
	for _, e := range els {
		if !m.has(e) {
			return false
		}
	}
	return true
}

func union[V1, V2 any](a map[string]V1, b map[string]V2) []string {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return slices.Sorted(maps.Keys(m))
}
