package nft

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// elemHash stands for an element in the applier's record of what the kernel
// holds: 16 bytes instead of the element's 128, which at 10,000 services ×
// 10 endpoints is the difference between ~4 and ~25 MiB. Two independent 64-bit
// hashes make a false "already programmed" as likely as a collision of 128
// random bits (~10⁻²⁸ for a million elements).
type elemHash [2]uint64

// elemSeeds are per process: the record never leaves it.
var elemSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashElem(e ruleset.Element) elemHash {
	var buf [128]byte
	b := buf[:0]
	addr := func(a netip.Addr) {
		b = append(b, byte(a.BitLen()))
		x := a.As16()
		b = append(b, x[:]...)
	}
	addr(e.Addr)
	addr(e.End)
	addr(e.Peer)
	b = append(b, e.Proto)
	b = binary.BigEndian.AppendUint16(b, e.Port)
	b = binary.BigEndian.AppendUint16(b, e.Slot)
	addr(e.Target.Addr())
	b = binary.BigEndian.AppendUint16(b, e.Target.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(len(e.Jump)))
	b = append(b, e.Jump...)
	return elemHash{maphash.Bytes(elemSeeds[0], b), maphash.Bytes(elemSeeds[1], b)}
}

// elemHashes records which elements a set holds.
type elemHashes map[elemHash]struct{}

func (m elemHashes) has(e ruleset.Element) bool {
	_, ok := m[hashElem(e)]
	return ok
}

func (m elemHashes) add(e ruleset.Element) { m[hashElem(e)] = struct{}{} }

func (m elemHashes) del(e ruleset.Element) { delete(m, hashElem(e)) }
