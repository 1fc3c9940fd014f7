package nft

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
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

// TestElementsMessageAsAttributeEncoderWrites checks the hand-written
// element message against the same message built with mdlayher/netlink's
// AttributeEncoder, byte for byte.
func TestElementsMessageAsAttributeEncoderWrites(t *testing.T) {
	a4, a6 := netip.MustParseAddr("10.1.0.2"), netip.MustParseAddr("fd00:1::2")
	els := []setElem{
		{key: a4.AsSlice()},
		{key: a6.AsSlice(), end: true},
		{key: a4.AsSlice(), open: true},
		{key: make([]byte, 28), data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}},
		{key: []byte{10, 0, 0, 1, 6, 0, 0, 80, 0, 0, 0, 3}, data: []byte{10, 128, 0, 1, 0x1f, 0x90}},
		{key: a4.AsSlice(), jump: "np-in/default/web"},
		{key: a6.AsSlice(), jump: "abc"},
	}
	for _, del := range []bool{false, true} {
		for n := range len(els) + 1 {
			got, err := elementsMessage(unix.NFPROTO_INET, "nfrouter", "svc-endpoints4-tcp", els[:n], del)
			if err != nil {
				t.Fatal(err)
			}
			want := encoderElementsMessage(t, unix.NFPROTO_INET, "nfrouter", "svc-endpoints4-tcp", els[:n], del)
			if got.Header != want.Header || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("%d elements (delete %v):\n got %v %x\nwant %v %x", n, del, got.Header, got.Data, want.Header, want.Data)
			}
		}
	}
}

// encoderElementsMessage is elementsMessage written with an AttributeEncoder.
func encoderElementsMessage(t *testing.T, family byte, table, set string, els []setElem, del bool) netlink.Message {
	t.Helper()
	list := netlink.NewAttributeEncoder()
	for _, e := range els {
		list.Nested(unix.NFTA_LIST_ELEM, func(ae *netlink.AttributeEncoder) error {
			if e.end {
				ae.Bytes(unix.NFTA_SET_ELEM_FLAGS, []byte{0, 0, 0, unix.NFT_SET_ELEM_INTERVAL_END})
			}
			ae.Nested(unix.NFTA_SET_ELEM_KEY, func(ae *netlink.AttributeEncoder) error {
				ae.Bytes(unix.NFTA_DATA_VALUE, e.key)
				return nil
			})
			switch {
			case del:
			case e.jump != "":
				ae.Nested(unix.NFTA_SET_ELEM_DATA, func(ae *netlink.AttributeEncoder) error {
					ae.Nested(unix.NFTA_DATA_VERDICT, func(ae *netlink.AttributeEncoder) error {
						ae.Bytes(unix.NFTA_VERDICT_CODE, []byte{0xff, 0xff, 0xff, 0xfd}) // NFT_JUMP, -3
						ae.String(unix.NFTA_VERDICT_CHAIN, e.jump)
						return nil
					})
					return nil
				})
			case e.data != nil:
				ae.Nested(unix.NFTA_SET_ELEM_DATA, func(ae *netlink.AttributeEncoder) error {
					ae.Bytes(unix.NFTA_DATA_VALUE, e.data)
					return nil
				})
			}
			if e.open && !del {
				ae.Bytes(unix.NFTA_SET_ELEM_USERDATA, udU32(udataElemFlags, udataElemIntervalOpen))
			}
			return nil
		})
	}
	listBytes, err := list.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, table)
	ae.String(unix.NFTA_SET_ELEM_LIST_SET, set)
	ae.Bytes(unix.NFTA_SET_ELEM_LIST_ELEMENTS|unix.NLA_F_NESTED, listBytes)
	attrs, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	typ, flags := unix.NFT_MSG_NEWSETELEM, netlink.Request|netlink.Create
	if del {
		typ, flags = unix.NFT_MSG_DELSETELEM, netlink.Request
	}
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | typ), Flags: flags},
		Data:   append([]byte{family, unix.NFNETLINK_V0, 0, 0}, attrs...),
	}
}

// TestEncodeElementsAsEachAlone checks that the elements encoded together,
// their keys and data in one shared buffer, are those encoded one by one,
// and that no key runs into the next.
func TestEncodeElementsAsEachAlone(t *testing.T) {
	a4, b4 := netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("10.128.0.7")
	a6, b6 := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("::ffff:10.1.2.3")
	for _, s := range []*ruleset.Set{
		{Name: "a4", Type: ruleset.Addr4},
		{Name: "a6", Type: ruleset.Addr6},
		{Name: "app6", Type: ruleset.AddrProtoPort6},
		{Name: "pair4", Type: ruleset.AddrPair4},
		{Name: "pair6", Type: ruleset.AddrPair6},
		{Name: "verdict", Type: ruleset.AddrProtoPort4, Verdict: true},
		{Name: "slots4", Type: ruleset.EndpointSlot4, Data: ruleset.AddrPort4},
		{Name: "slots6", Type: ruleset.EndpointSlot6, Data: ruleset.AddrPort6},
		{Name: "addrdata", Type: ruleset.Addr4, Data: ruleset.Addr4},
	} {
		var els []ruleset.Element
		for i, a := range []netip.Addr{a4, b4, a6, b6} {
			els = append(els, ruleset.Element{Addr: a, Peer: a, Proto: 6, Port: uint16(80 + i), Slot: uint16(i),
				Jump: "svc-" + a.String(), Target: netip.AddrPortFrom(a, 8080)})
		}
		els = append(els, ruleset.Element{Addr: a4}) // no target: no data
		got := encodeElements(s, els)
		for i, e := range els {
			want := setElem{key: encodeKey(s.Type, e)}
			switch {
			case s.Verdict:
				want.jump = e.Jump
			case s.Data != 0:
				want.data = encodeData(s.Data, e)
			}
			if !bytes.Equal(got[i].key, want.key) || !bytes.Equal(got[i].data, want.data) ||
				(got[i].data == nil) != (want.data == nil) || got[i].jump != want.jump {
				t.Errorf("set %s element %d: %+v, alone %+v", s.Name, i, got[i], want)
			}
			if cap(got[i].key) != len(got[i].key) {
				t.Errorf("set %s element %d: key can grow into the buffer", s.Name, i)
			}
		}
	}
	for _, a := range []netip.Addr{a4, a6, b6, {}} {
		if got := appendAddr(nil, a); !bytes.Equal(got, a.AsSlice()) {
			t.Errorf("address %v encoded as %x, want %x", a, got, a.AsSlice())
		}
	}
}
