package nft

import (
	"github.com/google/nftables/binaryutil"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Sets whose key has no type name (an endpoint-slot map's numgen slot is a
// plain integer) are declared the way `nft add map … { typeof … }` declares
// them: the set's userdata describes the expressions of key and data, and
// nft prints them from it. google/nftables writes no such userdata, so the
// applier replaces NFTA_SET_USERDATA in the serialized message with what
// nft 1.0.6 writes (captured with `nft --debug=mnl`): libnftnl's TLVs of one
// byte type, one byte length and host-endian 32-bit values.

// libnftnl's set userdata types (include/udata.h).
const (
	udataKeyByteorder  = 0
	udataDataByteorder = 1
	udataKeyTypeof     = 3
	udataDataTypeof    = 4
	udataDataInterval  = 6
	udataComment       = 7
)

// nft's expression types and protocol descriptions (src/expression.c,
// src/proto.c) as the typeof userdata names them.
const (
	exprPayload = 7
	exprMeta    = 9
	exprConcat  = 13
	exprNumgen  = 23

	descUDP  = 6
	descTCP  = 8
	descSCTP = 10
	descTH   = 11
	descIP   = 12
	descIP6  = 13

	fieldTHDport  = 2
	fieldDport    = 2 // of tcp, udp and sctp too
	fieldIPDaddr  = 12
	fieldIP6Daddr = 9

	metaL4Proto  = 16
	numgenRandom = 1
)

// portDesc is nft's protocol description of each transport protocol whose
// port a map's data may name.
var portDesc = map[uint8]uint32{unix.IPPROTO_TCP: descTCP, unix.IPPROTO_UDP: descUDP, unix.IPPROTO_SCTP: descSCTP}

func udU32(typ byte, v uint32) []byte {
	return append([]byte{typ, 4}, binaryutil.NativeEndian.PutUint32(v)...)
}

func udNest(typ byte, body []byte) []byte { return append([]byte{typ, byte(len(body))}, body...) }

func udExpr(exprType uint32, data []byte) []byte {
	return append(udU32(0, exprType), udNest(1, data)...)
}

func udPayload(desc, field uint32) []byte {
	return udExpr(exprPayload, append(udU32(0, desc), udU32(1, field)...))
}

func udConcat(parts ...[]byte) []byte {
	var body []byte
	for i, p := range parts {
		body = append(body, udNest(byte(i), p)...)
	}
	return udExpr(exprConcat, body)
}

// typeofUserdata returns the typeof description of a key or data type, nil
// for types declared by name.
func typeofUserdata(k ruleset.KeyType) []byte {
	daddr := udPayload(descIP, fieldIPDaddr)
	if k.V6() {
		daddr = udPayload(descIP6, fieldIP6Daddr)
	}
	dport := udPayload(descTH, fieldTHDport)
	switch k {
	case ruleset.EndpointSlot4, ruleset.EndpointSlot6:
		l4proto := udExpr(exprMeta, udU32(0, metaL4Proto))
		slot := udExpr(exprNumgen, append(append(udU32(0, numgenRandom), udU32(1, 1)...), udU32(2, 0)...))
		return udConcat(daddr, l4proto, dport, slot)
	case ruleset.AddrPort4, ruleset.AddrPort6:
		return udConcat(daddr, dport)
	}
	return nil
}

// dataTypeofUserdata is typeofUserdata for a map's data, whose port is
// protocol proto's (`tcp dport`; 0: `th dport`).
func dataTypeofUserdata(k ruleset.KeyType, proto uint8) []byte {
	desc, ok := portDesc[proto]
	if !ok || (k != ruleset.AddrPort4 && k != ruleset.AddrPort6) {
		return typeofUserdata(k)
	}
	daddr := udPayload(descIP, fieldIPDaddr)
	if k.V6() {
		daddr = udPayload(descIP6, fieldIP6Daddr)
	}
	return udConcat(daddr, udPayload(desc, fieldDport))
}

// Byte orders as nft's set userdata names them (BYTEORDER_* of nft's
// include/datatype.h): concatenations and verdicts have none.
const (
	byteorderInvalid = 0
	byteorderBig     = 2
)

// emptyConcat is the typeof description nft 1.0.6 stores for a
// concatenation declared by type names: a concat expression without parts.
var emptyConcat = udExpr(exprConcat, nil)

// setUserdata is the NFTA_SET_USERDATA nft 1.0.6 writes for s (read from
// the kernel after `nft -f` of the dry-run text; see
// TestKernelObjectsAreNftsOwn): the key's byte order, for maps the data's
// byte order, the typeof description of concatenated keys and data, for
// maps a data-interval flag, and the comment. google/nftables writes only
// some of these, so the applier replaces its userdata with this.
func setUserdata(s *ruleset.Set) []byte {
	_, keyConcat := setDatatype(s.Type)
	ud := udU32(udataKeyByteorder, byteorderOf(keyConcat))
	if s.IsMap() {
		dataOrder := uint32(byteorderInvalid)
		if !s.Verdict {
			_, dataConcat := setDatatype(s.Data)
			dataOrder = byteorderOf(dataConcat)
		}
		ud = append(ud, udU32(udataDataByteorder, dataOrder)...)
	}
	if keyConcat {
		ud = append(ud, udNest(udataKeyTypeof, typeofOrConcat(s.Type))...)
	}
	if !s.Verdict && s.Data != 0 {
		if _, concat := setDatatype(s.Data); concat {
			data := emptyConcat
			// nft describes the data by expressions only where the key is
			// (renderSet declares typeof data only then).
			if s.DataTypeof() != "" {
				data = dataTypeofUserdata(s.Data, s.DataProto)
			}
			ud = append(ud, udNest(udataDataTypeof, data)...)
		}
	}
	if s.IsMap() {
		ud = append(ud, udU32(udataDataInterval, 0)...)
	}
	if s.Comment != "" {
		ud = append(ud, udNest(udataComment, append([]byte(s.Comment), 0))...)
	}
	return ud
}

func byteorderOf(concat bool) uint32 {
	if concat {
		return byteorderInvalid
	}
	return byteorderBig
}

// typeofOrConcat is the typeof description of a concatenated key: its
// expressions for a typeof declaration, else an empty concatenation.
func typeofOrConcat(k ruleset.KeyType) []byte {
	if ud := typeofUserdata(k); ud != nil {
		return ud
	}
	return emptyConcat
}

// replaceSetUserdata swaps the NFTA_SET_USERDATA attribute of a serialized
// NEWSET message for ud.
func replaceSetUserdata(m *netlink.Message, ud []byte) error {
	const hdr = 4 // nfgenmsg
	out := append([]byte(nil), m.Data[:hdr]...)
	for b := m.Data[hdr:]; len(b) >= 4; {
		n := int(nativeU16(b[0:2]))
		if n < 4 || n > len(b) {
			break
		}
		padded := min((n+3)&^3, len(b))
		if typ := nativeU16(b[2:4]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER); typ != unix.NFTA_SET_USERDATA {
			out = append(out, b[:padded]...)
		}
		b = b[padded:]
	}
	attr, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: unix.NFTA_SET_USERDATA, Data: ud}})
	if err != nil {
		return err
	}
	m.Data = append(out, attr...)
	return nil
}

func nativeU16(b []byte) uint16 { return binaryutil.NativeEndian.Uint16(b) }
