package nft

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// TestElementSizeIsEncodedSize checks that setElem.size, by which elements
// are chunked, is the size elementsMessage gives each element.
func TestElementSizeIsEncodedSize(t *testing.T) {
	a4, a6 := netip.MustParseAddr("10.1.0.2"), netip.MustParseAddr("fd00:1::2")
	for _, e := range []setElem{
		{key: a4.AsSlice()},
		{key: a6.AsSlice(), end: true},
		{key: a4.AsSlice(), open: true},
		{key: make([]byte, 28), data: make([]byte, 20)},
		{key: a4.AsSlice(), jump: "np-in/default/web"},
		{key: a6.AsSlice(), jump: "abc"},
	} {
		for _, del := range []bool{false, true} {
			m, err := elementsMessage(unix.NFPROTO_INET, "nfrouter", "s", []setElem{e}, del)
			if err != nil {
				t.Fatal(err)
			}
			list := attrOf(t, m.Data[4:], unix.NFTA_SET_ELEM_LIST_ELEMENTS)
			if got := len(list); got != e.size(del) {
				t.Errorf("element %+v (delete %v): encoded in %d bytes, size says %d", e, del, got, e.size(del))
			}
		}
	}
}

// TestElementChunksFitOneAttribute checks that the element list of every
// message stays below the 64 KiB an attribute can hold, however long the
// chains that verdict map elements jump to.
func TestElementChunksFitOneAttribute(t *testing.T) {
	s := &ruleset.Set{Name: "m", Type: ruleset.Addr6, Verdict: true}
	var els []ruleset.Element
	for i := range 5000 {
		a := netip.AddrFrom16([16]byte{0xfd, 15: byte(i), 14: byte(i >> 8)})
		els = append(els, ruleset.Element{Addr: a, Jump: strings.Repeat("x", 200)})
	}
	b := newBatch(nftables.TableFamilyINet, "nfrouter")
	b.elements(s, els, false)
	b.finish()
	if b.err != nil {
		t.Fatal(b.err)
	}
	total := 0
	for _, m := range b.msgs {
		list := attrOf(t, m.Data[4:], unix.NFTA_SET_ELEM_LIST_ELEMENTS)
		if len(list)+4 > 0xffff {
			t.Errorf("element list of %d bytes does not fit one attribute", len(list))
		}
		total += len(parseAttrs(list))
	}
	if total != len(els) || len(b.msgs) < 2 {
		t.Errorf("%d elements in %d messages, want %d in several", total, len(b.msgs), len(els))
	}
}

func attrOf(t *testing.T, b []byte, typ uint16) []byte {
	t.Helper()
	for _, a := range parseAttrs(b) {
		if a.typ == typ {
			return a.data
		}
	}
	t.Fatalf("no attribute %d", typ)
	return nil
}
