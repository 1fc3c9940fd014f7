package nft

import (
	"encoding/binary"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// setDatatype is the kernel's type of a set key or map data.
func setDatatype(k ruleset.KeyType) (t nftables.SetDatatype, concat bool) {
	addr := nftables.TypeIPAddr
	if k.V6() {
		addr = nftables.TypeIP6Addr
	}
	switch k {
	case ruleset.Addr4, ruleset.Addr6:
		return addr, false
	case ruleset.AddrProtoPort4, ruleset.AddrProtoPort6:
		return nftables.MustConcatSetType(addr, nftables.TypeInetProto, nftables.TypeInetService), true
	case ruleset.AddrPair4, ruleset.AddrPair6:
		return nftables.MustConcatSetType(addr, addr), true
	case ruleset.AddrPort4, ruleset.AddrPort6:
		return nftables.MustConcatSetType(addr, nftables.TypeInetService), true
	case ruleset.EndpointSlot4, ruleset.EndpointSlot6:
		return nftables.MustConcatSetType(addr, nftables.TypeInetProto, nftables.TypeInetService, nftables.TypeInteger), true
	}
	return nftables.TypeInvalid, false
}

// keyTypeOf names the key type of a set read back from the kernel, 0 when
// it is none of ours.
func keyTypeOf(s *nftables.Set) ruleset.KeyType { return typeNamed(s.KeyType.Name) }

// dataTypeOf names the data type of a map that is not a verdict map.
func dataTypeOf(s *nftables.Set) ruleset.KeyType {
	if !s.IsMap {
		return 0
	}
	return typeNamed(s.DataType.Name)
}

func typeNamed(name string) ruleset.KeyType {
	for k := ruleset.Addr4; k <= ruleset.EndpointSlot6; k++ {
		if k.String() == name {
			return k
		}
	}
	return 0
}

// encodeKey encodes an element's key. Each field of a concatenation fills
// whole 32-bit registers; the slot is the host-endian integer numgen yields.
func encodeKey(t ruleset.KeyType, e ruleset.Element) []byte { return appendKey(nil, t, e) }

// appendKey appends e's key, encoded as encodeKey does, to dst.
func appendKey(dst []byte, t ruleset.KeyType, e ruleset.Element) []byte {
	key := appendAddr(dst, e.Addr)
	switch t {
	case ruleset.AddrProtoPort4, ruleset.AddrProtoPort6, ruleset.EndpointSlot4, ruleset.EndpointSlot6:
		key = append(key, e.Proto, 0, 0, 0)
		key = binary.BigEndian.AppendUint16(key, e.Port)
		key = append(key, 0, 0)
		if t == ruleset.EndpointSlot4 || t == ruleset.EndpointSlot6 {
			key = binary.NativeEndian.AppendUint32(key, uint32(e.Slot))
		}
	case ruleset.AddrPair4, ruleset.AddrPair6:
		key = appendAddr(key, e.Peer)
	}
	return key
}

// encodeData encodes the data of an address-and-port map element.
func encodeData(t ruleset.KeyType, e ruleset.Element) []byte { return appendData(nil, t, e) }

// appendData appends e's data, encoded as encodeData does, to dst.
func appendData(dst []byte, t ruleset.KeyType, e ruleset.Element) []byte {
	b := appendAddr(dst, e.Target.Addr())
	if t == ruleset.AddrPort4 || t == ruleset.AddrPort6 {
		b = binary.BigEndian.AppendUint16(b, e.Target.Port())
		b = append(b, 0, 0)
	}
	return b
}

// appendAddr appends a's bytes as netip.Addr.AsSlice gives them: 4 for
// IPv4, 16 for IPv6, none for the zero Addr.
func appendAddr(dst []byte, a netip.Addr) []byte {
	switch {
	case a.Is4():
		b := a.As4()
		return append(dst, b[:]...)
	case a.Is6():
		b := a.As16()
		return append(dst, b[:]...)
	}
	return dst
}

// decodeKey is encodeKey's inverse.
func decodeKey(t ruleset.KeyType, key []byte) (ruleset.Element, bool) {
	n := 4
	if t.V6() {
		n = 16
	}
	if len(key) < n {
		return ruleset.Element{}, false
	}
	addr, _ := netip.AddrFromSlice(key[:n])
	e := ruleset.Element{Addr: addr}
	switch t {
	case ruleset.AddrProtoPort4, ruleset.AddrProtoPort6, ruleset.EndpointSlot4, ruleset.EndpointSlot6:
		if len(key) < n+8 {
			return ruleset.Element{}, false
		}
		e.Proto = key[n]
		e.Port = binary.BigEndian.Uint16(key[n+4:])
		if t == ruleset.EndpointSlot4 || t == ruleset.EndpointSlot6 {
			if len(key) < n+12 {
				return ruleset.Element{}, false
			}
			e.Slot = uint16(binaryutil.NativeEndian.Uint32(key[n+8:]))
		}
	case ruleset.AddrPair4, ruleset.AddrPair6:
		if len(key) < 2*n {
			return ruleset.Element{}, false
		}
		e.Peer, _ = netip.AddrFromSlice(key[n : 2*n])
	}
	return e, true
}

// decodeData reads the target of an address-and-port map element into e.
func decodeData(t ruleset.KeyType, val []byte, e *ruleset.Element) bool {
	n := 4
	if t.V6() {
		n = 16
	}
	if len(val) < n+2 {
		return false
	}
	a, _ := netip.AddrFromSlice(val[:n])
	e.Target = netip.AddrPortFrom(a, binary.BigEndian.Uint16(val[n:]))
	return true
}
