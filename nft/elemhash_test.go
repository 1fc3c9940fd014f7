package nft

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Every field of an element takes part in its hash; equal elements hash
// alike.
func TestHashElemDistinguishesEveryField(t *testing.T) {
	a := netip.MustParseAddr("10.0.0.1")
	base := ruleset.Element{Addr: a, Proto: 6, Port: 80}
	variants := []ruleset.Element{
		base,
		{Addr: netip.MustParseAddr("10.0.0.2"), Proto: 6, Port: 80},
		{Addr: netip.MustParseAddr("::ffff:10.0.0.1"), Proto: 6, Port: 80},
		{Addr: a, End: a, Proto: 6, Port: 80},
		{Addr: a, Peer: a, Proto: 6, Port: 80},
		{Addr: a, Proto: 17, Port: 80},
		{Addr: a, Proto: 6, Port: 81},
		{Addr: a, Proto: 6, Port: 80, Slot: 1},
		{Addr: a, Proto: 6, Port: 80, Jump: "x"},
		{Addr: a, Proto: 6, Port: 80, Target: netip.AddrPortFrom(a, 0)},
		{Addr: a, Proto: 6, Port: 80, Target: netip.AddrPortFrom(a, 1)},
	}
	seen := map[elemHash]int{}
	for i, e := range variants {
		h := hashElem(e)
		if j, ok := seen[h]; ok {
			t.Errorf("%s and %s hash alike", variants[j].Text(), e.Text())
		}
		seen[h] = i
	}
	copyOf := base
	if hashElem(copyOf) != hashElem(base) {
		t.Error("equal elements hash differently")
	}
}

// A set the table makes anew (deleted and defined again between two
// applies) while the kernel still holds its old elements, known to the
// applier only by hash, is rewritten whole: the kernel ends with exactly the
// new elements.
func TestApplierRewritesSetMadeAnew(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	a, err := newApplier(nftables.TableFamilyIPv4, "hashtest", int(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	tbl := ruleset.NewTable("ip", "hashtest")
	def := ruleset.Set{Name: "addrs", Type: ruleset.Addr4}
	tbl.PutSet(def)
	for _, s := range []string{"10.0.0.1", "10.0.0.2"} {
		tbl.AddElement("addrs", ruleset.Element{Addr: netip.MustParseAddr(s)})
	}
	if _, err := a.apply(tbl, false); err != nil {
		t.Fatal(err)
	}
	tbl.DeleteSet("addrs")
	tbl.PutSet(def)
	tbl.AddElement("addrs", ruleset.Element{Addr: netip.MustParseAddr("10.0.0.3")})
	if _, err := a.apply(tbl, false); err != nil {
		t.Fatal(err)
	}
	got := elementsIn(t, nftIn(t, ns, "", "list", "set", "ip", "hashtest", "addrs"))
	if want := []string{"10.0.0.3"}; !slices.Equal(got, want) {
		t.Errorf("kernel holds %v, want %v", got, want)
	}
	// The record is right again: an incremental removal reaches the kernel.
	tbl.RemoveElement("addrs", ruleset.Element{Addr: netip.MustParseAddr("10.0.0.3")})
	if _, err := a.apply(tbl, false); err != nil {
		t.Fatal(err)
	}
	if got := elementsIn(t, nftIn(t, ns, "", "list", "set", "ip", "hashtest", "addrs")); len(got) != 0 {
		t.Errorf("kernel holds %v after the removal, want none", got)
	}
}

// elementsIn reads the elements of one listed set.
func elementsIn(t *testing.T, listing string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(listing, "elements = {")
	if !ok {
		return nil
	}
	body, _, _ := strings.Cut(rest, "}")
	var out []string
	for _, f := range strings.Split(body, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}
