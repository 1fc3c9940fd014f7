package nft

import (
	"encoding/binary"
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
	for _, e := range els {
		ke := setElem{key: encodeKey(s.Type, e)}
		switch {
		case s.Verdict:
			ke.jump = e.Jump
		case s.Data != 0:
			ke.data = encodeData(s.Data, e)
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
// deleted element is named by its key alone.
func elementsMessage(family byte, table, set string, els []setElem, del bool) (netlink.Message, error) {
	list := netlink.NewAttributeEncoder()
	for _, e := range els {
		list.Nested(unix.NFTA_LIST_ELEM, func(ae *netlink.AttributeEncoder) error {
			if e.end {
				ae.Bytes(unix.NFTA_SET_ELEM_FLAGS, binary.BigEndian.AppendUint32(nil, unix.NFT_SET_ELEM_INTERVAL_END))
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
						ae.Bytes(unix.NFTA_VERDICT_CODE, binary.BigEndian.AppendUint32(nil, uint32(nftJump)))
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
		return netlink.Message{}, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, table)
	ae.String(unix.NFTA_SET_ELEM_LIST_SET, set)
	ae.Bytes(unix.NFTA_SET_ELEM_LIST_ELEMENTS|unix.NLA_F_NESTED, listBytes)
	attrs, err := ae.Encode()
	if err != nil {
		return netlink.Message{}, err
	}
	typ, flags := unix.NFT_MSG_NEWSETELEM, netlink.Request|netlink.Create
	if del {
		typ, flags = unix.NFT_MSG_DELSETELEM, netlink.Request
	}
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | typ), Flags: flags},
		Data:   append([]byte{family, unix.NFNETLINK_V0, 0, 0}, attrs...),
	}, nil
}
