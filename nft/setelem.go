package nft

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// setElem is one set element in the kernel's encoding. The applier writes
// element messages itself rather than through google/nftables, which has no
// way to mark an interval open (see open).
type setElem struct {
	key  []byte
	data []byte // maps to data: the value
	jump string // verdict maps: the chain
	// end marks the element that ends an interval (NFT_SET_ELEM_INTERVAL_END).
	end bool
	// open marks the start of an interval that runs to the top of the
	// address space, which has no end element: nft 1.0.6 notes it in the
	// element's userdata (NFTNL_UDATA_SET_ELEM_FLAGS =
	// NFTNL_SET_ELEM_F_INTERVAL_OPEN) and reads it back from there.
	open bool
}

// libnftnl's element userdata (include/udata.h).
const (
	udataElemFlags        = 1
	udataElemIntervalOpen = 1
)

// nftJump is the NFT_JUMP verdict code, a negative number sent as an
// unsigned 32-bit value.
var nftJump int32 = unix.NFT_JUMP

// size is the encoded size of the element in elementsMessage.
func (e setElem) size(del bool) int {
	attr := func(n int) int { return 4 + (n+3)&^3 }
	n := attr(0) + attr(attr(len(e.key))) // NFTA_LIST_ELEM, NFTA_SET_ELEM_KEY
	if e.end {
		n += attr(4)
	}
	switch {
	case del:
	case e.jump != "":
		n += attr(attr(attr(4) + attr(len(e.jump)+1)))
	case e.data != nil:
		n += attr(attr(len(e.data)))
	}
	if e.open && !del {
		n += attr(6)
	}
	return n
}

// encodeElements turns elements into kernel set elements. Interval sets get
// nft's encoding: each range is a start element and an end element one past
// its last address (none when the range reaches the top of the address
// space: the start is marked open instead), after a leading end element at
// the zero address.
func encodeElements(s *ruleset.Set, els []ruleset.Element) []setElem {
	var out []setElem
	if s.Interval {
		if len(els) > 0 && !els[0].Addr.IsUnspecified() {
			out = append(out, setElem{key: zeroAddr(s.Type.V6()).AsSlice(), end: true})
		}
		for _, e := range els {
			next := e.End.Next()
			out = append(out, setElem{key: e.Addr.AsSlice(), open: !next.IsValid()})
			if next.IsValid() {
				out = append(out, setElem{key: next.AsSlice(), end: true})
			}
		}
		return out
	}
	// Keys and data share one buffer: a cold start encodes 130,000
	// elements, and a few small allocations for each added up.
	out = make([]setElem, 0, len(els))
	arena := make([]byte, 0, len(els)*(16+8+4+16+4)) // the longest key and data
	for _, e := range els {
		start := len(arena)
		arena = appendKey(arena, s.Type, e)
		ke := setElem{key: arena[start:len(arena):len(arena)]}
		switch {
		case s.Verdict:
			ke.jump = e.Jump
		case s.Data != 0:
			start = len(arena)
			if arena = appendData(arena, s.Data, e); len(arena) > start {
				ke.data = arena[start:len(arena):len(arena)] // nil for none, as encodeData's
			}
		}
		out = append(out, ke)
	}
	return out
}

func zeroAddr(v6 bool) netip.Addr {
	if v6 {
		return netip.IPv6Unspecified()
	}
	return netip.IPv4Unspecified()
}

// elementsMessage is the NEWSETELEM (or, with del, DELSETELEM) message for
// els of set in table, with the attributes libnftnl writes for them. A
// deleted element is named by its key alone. It writes the attributes
// straight into one buffer: a cold start sends 130,000 elements, and an
// attribute encoder allocated several times for each.
func elementsMessage(family byte, table, set string, els []setElem, del bool) (netlink.Message, error) {
	size := 0
	for _, e := range els {
		size += e.size(del)
	}
	if 4+size > maxAttr {
		return netlink.Message{}, fmt.Errorf("element list of %d bytes does not fit one attribute", size)
	}
	b := attrWriter(make([]byte, 0, 4+attrSize(len(table)+1)+attrSize(len(set)+1)+4+size))
	b = append(b, family, unix.NFNETLINK_V0, 0, 0)
	b = b.str(unix.NFTA_SET_ELEM_LIST_TABLE, table)
	b = b.str(unix.NFTA_SET_ELEM_LIST_SET, set)
	list := b.begin(unix.NFTA_SET_ELEM_LIST_ELEMENTS | unix.NLA_F_NESTED)
	var u32 [4]byte
	for _, e := range els {
		elem := b.begin(unix.NFTA_LIST_ELEM | unix.NLA_F_NESTED)
		if e.end {
			binary.BigEndian.PutUint32(u32[:], unix.NFT_SET_ELEM_INTERVAL_END)
			b = b.attr(unix.NFTA_SET_ELEM_FLAGS, u32[:])
		}
		key := b.begin(unix.NFTA_SET_ELEM_KEY | unix.NLA_F_NESTED)
		b = b.attr(unix.NFTA_DATA_VALUE, e.key)
		b.end(key)
		switch {
		case del:
		case e.jump != "":
			data := b.begin(unix.NFTA_SET_ELEM_DATA | unix.NLA_F_NESTED)
			verdict := b.begin(unix.NFTA_DATA_VERDICT | unix.NLA_F_NESTED)
			binary.BigEndian.PutUint32(u32[:], uint32(nftJump))
			b = b.attr(unix.NFTA_VERDICT_CODE, u32[:])
			b = b.str(unix.NFTA_VERDICT_CHAIN, e.jump)
			b.end(verdict)
			b.end(data)
		case e.data != nil:
			data := b.begin(unix.NFTA_SET_ELEM_DATA | unix.NLA_F_NESTED)
			b = b.attr(unix.NFTA_DATA_VALUE, e.data)
			b.end(data)
		}
		if e.open && !del {
			b = b.attr(unix.NFTA_SET_ELEM_USERDATA, udU32(udataElemFlags, udataElemIntervalOpen))
		}
		b.end(elem)
	}
	b.end(list)
	typ, flags := unix.NFT_MSG_NEWSETELEM, netlink.Request|netlink.Create
	if del {
		typ, flags = unix.NFT_MSG_DELSETELEM, netlink.Request
	}
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | typ), Flags: flags},
		Data:   b,
	}, nil
}

// maxAttr is the most an attribute's 16-bit length can say.
const maxAttr = 0xffff

// attrSize is the size of an attribute with n bytes of payload, padded.
func attrSize(n int) int { return 4 + (n+3)&^3 }

// attrWriter appends netlink attributes (native-endian length and type,
// payload padded to four bytes) to a message, as mdlayher/netlink's
// AttributeEncoder encodes them.
type attrWriter []byte

func (b attrWriter) attr(typ uint16, v []byte) attrWriter {
	b = binary.NativeEndian.AppendUint16(b, uint16(4+len(v)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	return b.pad()
}

// str is a NUL-terminated string attribute.
func (b attrWriter) str(typ uint16, v string) attrWriter {
	b = binary.NativeEndian.AppendUint16(b, uint16(4+len(v)+1))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	b = append(b, 0)
	return b.pad()
}

func (b attrWriter) pad() attrWriter {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// begin starts a nested attribute at the end of b and returns where it
// starts; end, once its content is written, fills in its length.
func (b *attrWriter) begin(typ uint16) int {
	at := len(*b)
	*b = binary.NativeEndian.AppendUint16(*b, 0)
	*b = binary.NativeEndian.AppendUint16(*b, typ)
	return at
}

func (b attrWriter) end(at int) {
	binary.NativeEndian.PutUint16(b[at:], uint16(len(b)-at))
}
