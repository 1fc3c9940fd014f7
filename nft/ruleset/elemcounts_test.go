package ruleset

import (
	"net/netip"
	"slices"
	"testing"
)

// elementKinds are elements of every shape the planners make, and the odd
// ones that must not pack: each is distinct from every other.
func elementKinds() []Element {
	a4, b4 := netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("10.128.0.7")
	a6, b6 := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00:1::7")
	mapped := netip.MustParseAddr("::ffff:10.96.0.1")
	return []Element{
		{},
		{Addr: a4},
		{Addr: b4},
		{Addr: a6},
		{Addr: mapped},
		{Addr: a6.WithZone("eth0")},
		Range(a4, b4),
		Range(a6, b6),
		{Addr: a4, Peer: b4},
		{Addr: a6, Peer: b6},
		{Addr: a4, Proto: 6, Port: 80},
		{Addr: a4, Proto: 17, Port: 80},
		{Addr: a4, Proto: 6, Port: 443},
		{Addr: a4, Proto: 6, Port: 80, Jump: "svc-abc"},
		{Addr: a4, Proto: 6, Port: 80, Jump: "svc-abd"},
		{Addr: a4, Proto: 6, Port: 80, Slot: 3, Target: netip.AddrPortFrom(b4, 8080)},
		{Addr: a4, Proto: 6, Port: 80, Slot: 3, Target: netip.AddrPortFrom(b4, 8081)},
		{Addr: a4, Proto: 6, Port: 80, Slot: 4, Target: netip.AddrPortFrom(b4, 8080)},
		{Addr: a6, Proto: 6, Port: 80, Slot: 3, Target: netip.AddrPortFrom(b6, 8080)},
		{Addr: a4, Target: netip.AddrPortFrom(netip.Addr{}, 8080)},
		{Target: netip.AddrPortFrom(b4, 0)},
		// Four IPv6 addresses do not fit the packed form.
		{Addr: a6, End: b6, Peer: a6, Target: netip.AddrPortFrom(b6, 1)},
	}
}

func TestElementCountsKeepEveryElementAsItWas(t *testing.T) {
	kinds := elementKinds()
	var c ElementCounts
	for i, e := range kinds {
		for range i + 1 {
			c.add(e)
		}
	}
	if c.Len() != len(kinds) {
		t.Fatalf("Len %d, want %d", c.Len(), len(kinds))
	}
	for i, e := range kinds {
		if got := c.Count(e); got != i+1 {
			t.Errorf("Count(%+v) = %d, want %d", e, got, i+1)
		}
	}
	got := slices.Collect(c.All())
	want := slices.Clone(kinds)
	slices.SortFunc(got, Element.Compare)
	slices.SortFunc(want, Element.Compare)
	if !slices.Equal(got, want) {
		t.Errorf("All:\n got %+v\nwant %+v", got, want)
	}
}

func TestElementCountsRemove(t *testing.T) {
	var c ElementCounts
	for _, e := range elementKinds() {
		if n := c.remove(e); n != 0 {
			t.Errorf("remove of absent %+v = %d", e, n)
		}
		c.add(e)
		c.add(e)
		if n := c.remove(e); n != 1 {
			t.Errorf("remove of twice-added %+v = %d, want 1", e, n)
		}
		if n := c.remove(e); n != 0 || c.Count(e) != 0 {
			t.Errorf("%+v still counted after its last reason went", e)
		}
	}
	if c.Len() != 0 {
		t.Errorf("Len %d after removing everything", c.Len())
	}
}
