package nft

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

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
		{Name: "pairs4", Type: ruleset.AddrPair4}, {Name: "pairs6", Type: ruleset.AddrPair6},
		{Name: "eps4", Type: ruleset.EndpointSlot4, Data: ruleset.AddrPort4, DataProto: 6, Comment: "slots"},
		{Name: "eps6", Type: ruleset.EndpointSlot6, Data: ruleset.AddrPort6, DataProto: 17},
		{Name: "vips6", Type: ruleset.AddrProtoPort6},
		{Name: "sticky4", Type: ruleset.Addr4, Data: ruleset.Addr4, Dynamic: true, Size: 65535, Timeout: 3 * time.Hour, Comment: "clients"},
		{Name: "sticky6", Type: ruleset.Addr6, Data: ruleset.Addr6, Dynamic: true, Size: 65535, Timeout: 100 * time.Second}}
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
	vip4, vip6 := netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00:96::1")
	elems["eps4"] = []ruleset.Element{{Addr: vip4, Proto: 6, Port: 80, Slot: 1, Target: netip.AddrPortFrom(a4, 8080)}}
	elems["eps6"] = []ruleset.Element{{Addr: vip6, Proto: 132, Port: 80, Target: netip.AddrPortFrom(a6, 8080)}}
	post.Rules = append(post.Rules,
		ruleset.Rule{Matches: []ruleset.Match{ruleset.CtStatusDNAT{}, ruleset.AddrPairIn{Set: "pairs4"}}, Verdict: ruleset.Masquerade{}},
		ruleset.Rule{Matches: []ruleset.Match{ruleset.CtStatusDNAT{}, ruleset.DestPortIn{Set: "vips4"}, ruleset.RememberClient{Map: "sticky4"}}},
		ruleset.Rule{Matches: []ruleset.Match{ruleset.CtStatusDNAT{}, ruleset.DestPortIn{V6: true, Set: "vips6"}, ruleset.RememberClient{V6: true, Map: "sticky6"}}})
	pre.Rules = append(pre.Rules,
		ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIs{Addr: vip4}, ruleset.DPort{Proto: 6, First: 80}}, Verdict: ruleset.DNATSticky{Map: "sticky4", Port: 8080}},
		ruleset.Rule{Matches: []ruleset.Match{ruleset.AddrIs{V6: true, Addr: vip6}, ruleset.DPort{Proto: 132, First: 80}}, Verdict: ruleset.DNATSticky{V6: true, Map: "sticky6", Port: 8080}},
		ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{Proto: 6, Set: "vips4"}}, Verdict: ruleset.DNATSlot{Proto: 6, Slots: 2, Map: "eps4"}},
		ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: true, Proto: 17, Set: "vips6"}}, Verdict: ruleset.DNATSlot{V6: true, Proto: 17, Slots: 3, Map: "eps6"}})
	sets = append(sets, ruleset.Set{Name: "vips4", Type: ruleset.AddrProtoPort4})
	input.Rules = append(input.Rules,
		ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{Set: "vips4"}}, Verdict: ruleset.Reject{}},
		ruleset.Rule{Matches: []ruleset.Match{ruleset.DestPortIn{V6: true, Set: "vips6"}}, Verdict: ruleset.Reject{V6: true}})
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
