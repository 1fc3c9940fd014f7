package nft

import (
	"bytes"
	"context"
	"net/netip"
	"testing"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// fixedPart is a part that plans a fixed set of chains and sets, for tests
// of the table machinery.
type fixedPart struct {
	t      *ruleset.Table
	chains []*ruleset.Chain
	sets   []ruleset.Set
	elems  map[string][]ruleset.Element
}

func (p *fixedPart) Name() string       { return "fixed" }
func (p *fixedPart) Kinds() model.Kinds { return model.KindNodes }
func (p *fixedPart) Plan(context.Context, *model.State, *model.Changes) {
	for _, s := range p.sets {
		p.t.PutSet(s)
		for _, e := range p.elems[s.Name] {
			if !p.t.Sets[s.Name].Has(e) {
				p.t.AddElement(s.Name, e)
			}
		}
	}
	for _, c := range p.chains {
		p.t.PutChain(c)
	}
}

// primitiveChains use every rule primitive that is not covered by a planner's
// kernel test yet, one per rule.
func primitiveChains() ([]ruleset.Set, map[string][]ruleset.Element, []*ruleset.Chain) {
	sets := []ruleset.Set{{Name: "addrs", Type: ruleset.Addr4},
		{Name: "pairs4", Type: ruleset.AddrPair4}, {Name: "pairs6", Type: ruleset.AddrPair6}}
	post := &ruleset.Chain{Name: "post", Base: &ruleset.Hook{Hook: "postrouting", Type: "nat", Priority: 100},
		Rules: []ruleset.Rule{
			{Matches: []ruleset.Match{ruleset.MarkHas{Bits: 0x4000}, ruleset.MarkClear{Bits: 0x4000}}, Verdict: ruleset.Masquerade{}},
			{Matches: []ruleset.Match{ruleset.AddrIn{Src: true, Set: "addrs"}, ruleset.AddrIn{Not: true, Set: "addrs"}}, Verdict: ruleset.Masquerade{}},
			{Matches: []ruleset.Match{ruleset.AddrPairIn{Set: "pairs4"}}, Verdict: ruleset.Masquerade{}},
			{Matches: []ruleset.Match{ruleset.AddrPairIn{V6: true, Set: "pairs6"}}, Verdict: ruleset.Masquerade{}},
		}}
	pre := &ruleset.Chain{Name: "pre", Base: &ruleset.Hook{Hook: "prerouting", Type: "nat", Priority: -100},
		Rules: []ruleset.Rule{
			{Matches: []ruleset.Match{ruleset.AddrIn{Src: true, Not: true, Set: "addrs"}, ruleset.MarkSet{Bits: 0x4000}}},
		}}
	input := &ruleset.Chain{Name: "input", Base: &ruleset.Hook{Hook: "input", Type: "filter"},
		Rules: []ruleset.Rule{
			{Matches: []ruleset.Match{ruleset.AddrIn{Set: "addrs"}, ruleset.ICMPv4Type{Type: 8, Name: "echo-request"}}, Verdict: ruleset.Accept{}},
		}}
	a4, a6 := netip.MustParseAddr("10.1.0.2"), netip.MustParseAddr("fd00:1::2")
	elems := map[string][]ruleset.Element{
		"pairs4": {{Addr: a4, Peer: a4}},
		"pairs6": {{Addr: a6, Peer: a6}},
	}
	return sets, elems, []*ruleset.Chain{post, pre, input}
}

// TestKernelPrimitivesRoundTrip programs every rule primitive and checks that
// nft lists exactly the text ruleset renders, that the listing parses, and
// that a full resync finds nothing to repair (the expressions read back equal
// the ones written).
func TestKernelPrimitivesRoundTrip(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	sets, elems, chains := primitiveChains()
	mk := func(tbl *ruleset.Table) Part { return &fixedPart{t: tbl, sets: sets, elems: elems, chains: chains} }
	b := newBackendIn(t, ns, mk)
	st := &model.State{}
	syncOK(t, b, st, &model.Changes{Full: true})
	if s := syncOK(t, b, st, &model.Changes{Full: true}); s.Messages != 0 {
		t.Errorf("full resync sent %d messages (%v), want 0: the read-back differs from what was written", s.Messages, s.ByType)
	}
	var want bytes.Buffer
	if err := Render(t.Context(), &want, st, func(tbl *ruleset.Table) ([]Part, error) { return []Part{mk(tbl)}, nil }); err != nil {
		t.Fatal(err)
	}
	listed := nftIn(t, ns, "", "list", "ruleset")
	if normalize(listed) != normalize(want.String()) {
		t.Errorf("kernel listing differs from the rendering:\n--- nft list ruleset\n%s\n--- rendered\n%s", listed, want.String())
	}
	nftIn(t, kerneltest.NewNetNS(t), listed, "-c", "-f", "-")
}
