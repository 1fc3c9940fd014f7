package nft

import (
	"fmt"
	"slices"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/nft/internal/nftconn"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// readBack lists our table from the kernel (only our table: never the whole
// ruleset) and returns it as a programmed cache. reset says that some object
// has a definition that cannot be changed in place.
func (a *applier) readBack(desired *ruleset.Table) (programmed, bool, error) {
	prog := newProgrammed()
	c, err := nftconn.Open(a.nsFd, nftconn.Buffers(8<<20, 1<<20))
	if err != nil {
		return prog, false, fmt.Errorf("read back table %s: %w", a.name, err)
	}
	tables, err := c.ListTablesOfFamily(a.family)
	if err != nil {
		return prog, false, fmt.Errorf("read back table %s: list tables: %w", a.name, err)
	}
	if !slices.ContainsFunc(tables, func(t *nftables.Table) bool { return t.Name == a.name }) {
		return prog, false, nil
	}
	prog.table = true
	tbl := &nftables.Table{Family: a.family, Name: a.name}
	chains, err := c.ListChainsOfTableFamily(a.family)
	if err != nil {
		return prog, false, fmt.Errorf("read back table %s: list chains: %w", a.name, err)
	}
	reset := false
	for _, ch := range chains {
		if ch.Table.Name != a.name {
			continue
		}
		rules, err := c.GetRules(tbl, ch)
		if err != nil {
			return prog, false, fmt.Errorf("read back chain %s: %w", ch.Name, err)
		}
		pc := &progChain{base: hookOf(ch)}
		for _, r := range rules {
			pc.keys = append(pc.keys, ruleKey(a.family, r.Exprs))
		}
		prog.chains[ch.Name] = pc
	}
	sets, err := c.GetSets(tbl)
	if err != nil {
		return prog, false, fmt.Errorf("read back table %s: list sets: %w", a.name, err)
	}
	for _, s := range sets {
		def := ruleset.Set{Name: s.Name, Comment: s.Comment, Interval: s.Interval, Type: keyTypeOf(s), Data: dataTypeOf(s)}
		def.Verdict = s.IsMap && def.Data == 0
		if s.Dynamic {
			def.Dynamic, def.Size, def.Timeout = true, s.Size, s.Timeout
		}
		ps := &progSet{def: def, elems: elemHashes{}}
		prog.sets[s.Name] = ps
		d := desired.Sets[s.Name]
		if d == nil {
			continue // to be deleted; its elements do not matter
		}
		// google/nftables v0.3.0 reads neither set userdata (comments, the
		// protocol a map's data names) nor the key types of maps back;
		// names fix them, so only flags and a known key type are compared.
		if def.Type == 0 {
			def.Type = d.Type
		}
		def.Comment, def.DataProto = d.Comment, d.DataProto
		ps.def = def
		if !d.SameDef(&def) {
			reset = true
			continue
		}
		// A hashed concatenation flagged NFT_SET_CONCAT, as nfrouter wrote
		// them before it wrote sets as nft does: nft's `add` of the listed
		// set fails with EEXIST until the set is made anew.
		if _, concat := setDatatype(d.Type); s.Concatenation != (concat && d.Interval) {
			reset = true
			continue
		}
		if d.Dynamic {
			continue // the packet path's elements, not ours
		}
		els, err := c.GetSetElements(s)
		if err != nil {
			return prog, false, fmt.Errorf("read back set %s: %w", s.Name, err)
		}
		if d.Interval {
			// Interval sets are compared in their kernel encoding and
			// rewritten whole when they differ.
			if sameEncoding(els, encodeElements(d, ruleset.SortedElements(d))) {
				ps.elems = elemSet(d)
			} else {
				ps.unknown = true
			}
			continue
		}
		for _, ke := range els {
			e, ok := decodeElement(d, ke)
			if !ok {
				ps.unknown = true
				continue
			}
			ps.elems.add(e)
			ps.kernel = append(ps.kernel, e)
		}
	}
	return prog, reset, nil
}

func hookOf(ch *nftables.Chain) *ruleset.Hook {
	if ch.Hooknum == nil || ch.Priority == nil {
		return nil
	}
	h := &ruleset.Hook{Type: string(ch.Type), Priority: int32(*ch.Priority)}
	for _, name := range []string{"prerouting", "input", "forward", "output", "postrouting"} {
		if *hookNum(name) == *ch.Hooknum {
			h.Hook = name
		}
	}
	h.Drop = ch.Policy != nil && *ch.Policy == nftables.ChainPolicyDrop
	return h
}

// decodeElement turns a kernel element of a non-interval set back into an
// Element.
func decodeElement(s *ruleset.Set, ke nftables.SetElement) (ruleset.Element, bool) {
	e, ok := decodeKey(s.Type, ke.Key)
	if !ok {
		return ruleset.Element{}, false
	}
	switch {
	case s.Data != 0:
		if !decodeData(s.Data, ke.Val, &e) {
			return ruleset.Element{}, false
		}
	case s.Verdict:
		switch {
		case ke.VerdictData != nil:
			e.Jump = ke.VerdictData.Chain
		default:
			// google/nftables v0.3.0 does not know the map's data type when
			// reading it back and leaves the verdict's attributes in Val.
			attrs, err := netlink.UnmarshalAttributes(ke.Val)
			if err != nil {
				return ruleset.Element{}, false
			}
			for _, a := range attrs {
				if a.Type == unix.NFTA_VERDICT_CHAIN {
					e.Jump = string(trimNUL(a.Data))
				}
			}
			if e.Jump == "" {
				return ruleset.Element{}, false
			}
		}
	}
	return e, true
}

func sameEncoding(got []nftables.SetElement, want []setElem) bool {
	g := make([]string, len(got))
	for i, e := range got {
		g[i] = fmt.Sprintf("%x/%v", e.Key, e.IntervalEnd)
	}
	w := make([]string, len(want))
	for i, e := range want {
		w[i] = fmt.Sprintf("%x/%v", e.key, e.end)
	}
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}
