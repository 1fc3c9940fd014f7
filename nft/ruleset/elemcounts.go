package ruleset

import (
	"encoding/binary"
	"iter"
	"net/netip"
)

// ElementCounts counts how many reasons a planner has for each element of a
// set. It stores elements packed: an Element is 128 bytes (three netip.Addrs,
// a string, an AddrPort), but what it holds fits 16 bytes for IPv4 and 40 for
// IPv6, which at 10,000 services × 10 endpoints is the difference between
// ~28 and ~5 MiB. Elements that do not pack (verdict-map elements, which name
// a chain; addresses with a zone) are kept as they are. The zero value is
// empty and ready to use.
type ElementCounts struct {
	small map[[smallElem]byte]int32
	large map[[largeElem]byte]int32
	other map[Element]int32
}

// Packed sizes: a header byte, the addresses present, then protocol, port,
// slot and target port, which are always written.
const (
	smallElem = 16 // IPv4 elements: 1 + 2×4 + 7
	largeElem = 40 // IPv6 elements: 1 + 2×16 + 7
)

// Header bits: which addresses are present, and which of those are IPv6.
const (
	hasAddr = 1 << iota
	hasEnd
	hasPeer
	hasTarget
	v6Addr
	v6End
	v6Peer
	v6Target
)

// Count returns how many reasons there are for e (0: it is not in the set).
func (c *ElementCounts) Count(e Element) int {
	buf, n, ok := pack(e)
	switch {
	case !ok:
		return int(c.other[e])
	case n <= smallElem:
		return int(c.small[[smallElem]byte(buf[:smallElem])])
	default:
		return int(c.large[buf])
	}
}

// Len returns the number of elements.
func (c *ElementCounts) Len() int { return len(c.small) + len(c.large) + len(c.other) }

// All yields every element, in no particular order.
func (c *ElementCounts) All() iter.Seq[Element] {
	return func(yield func(Element) bool) {
		for k := range c.small {
			if !yield(unpack(k[:])) {
				return
			}
		}
		for k := range c.large {
			if !yield(unpack(k[:])) {
				return
			}
		}
		for e := range c.other {
			if !yield(e) {
				return
			}
		}
	}
}

// add adds one reason for e and returns the new count.
func (c *ElementCounts) add(e Element) int {
	buf, n, ok := pack(e)
	switch {
	case !ok:
		if c.other == nil {
			c.other = map[Element]int32{}
		}
		c.other[e]++
		return int(c.other[e])
	case n <= smallElem:
		if c.small == nil {
			c.small = map[[smallElem]byte]int32{}
		}
		k := [smallElem]byte(buf[:smallElem])
		c.small[k]++
		return int(c.small[k])
	default:
		if c.large == nil {
			c.large = map[[largeElem]byte]int32{}
		}
		c.large[buf]++
		return int(c.large[buf])
	}
}

// remove removes one reason for e, if it has any, and returns the new count.
func (c *ElementCounts) remove(e Element) int {
	buf, n, ok := pack(e)
	switch {
	case !ok:
		return decrement(c.other, e)
	case n <= smallElem:
		return decrement(c.small, [smallElem]byte(buf[:smallElem]))
	default:
		return decrement(c.large, buf)
	}
}

func decrement[K comparable](m map[K]int32, k K) int {
	n, ok := m[k]
	switch {
	case !ok:
		return 0
	case n <= 1:
		delete(m, k)
		return 0
	}
	m[k] = n - 1
	return int(n - 1)
}

// pack writes e as a header byte, its valid addresses (4 or 16 bytes each),
// then protocol, port, slot and target port; n is the length used. The
// header says which fields follow, so two elements pack alike only if they
// are equal; the bytes after n are zero. ok is false for an element that
// does not pack: one with a chain to jump to, an address with a zone, or
// more than fits largeElem.
func pack(e Element) (buf [largeElem]byte, n int, ok bool) {
	if e.Jump != "" {
		return buf, 0, false
	}
	var hdr byte
	n = 1
	put := func(a netip.Addr, present, v6 byte) bool {
		switch {
		case !a.IsValid():
			return true
		case a.Zone() != "":
			return false
		case a.Is4():
			if n+4+7 > largeElem {
				return false
			}
			b := a.As4()
			n += copy(buf[n:], b[:])
			hdr |= present
		default:
			if n+16+7 > largeElem {
				return false
			}
			b := a.As16()
			n += copy(buf[n:], b[:])
			hdr |= present | v6
		}
		return true
	}
	if !put(e.Addr, hasAddr, v6Addr) || !put(e.End, hasEnd, v6End) || !put(e.Peer, hasPeer, v6Peer) ||
		!put(e.Target.Addr(), hasTarget, v6Target) {
		return buf, 0, false
	}
	buf[0] = hdr
	buf[n] = e.Proto
	binary.BigEndian.PutUint16(buf[n+1:], e.Port)
	binary.BigEndian.PutUint16(buf[n+3:], e.Slot)
	binary.BigEndian.PutUint16(buf[n+5:], e.Target.Port())
	return buf, n + 7, true
}

// unpack is pack's inverse.
func unpack(b []byte) Element {
	hdr := b[0]
	n := 1
	get := func(present, v6 byte) netip.Addr {
		switch {
		case hdr&present == 0:
			return netip.Addr{}
		case hdr&v6 != 0:
			a := netip.AddrFrom16([16]byte(b[n : n+16]))
			n += 16
			return a
		default:
			a := netip.AddrFrom4([4]byte(b[n : n+4]))
			n += 4
			return a
		}
	}
	var e Element
	e.Addr = get(hasAddr, v6Addr)
	e.End = get(hasEnd, v6End)
	e.Peer = get(hasPeer, v6Peer)
	target := get(hasTarget, v6Target)
	e.Proto = b[n]
	e.Port = binary.BigEndian.Uint16(b[n+1:])
	e.Slot = binary.BigEndian.Uint16(b[n+3:])
	e.Target = netip.AddrPortFrom(target, binary.BigEndian.Uint16(b[n+5:]))
	return e
}
