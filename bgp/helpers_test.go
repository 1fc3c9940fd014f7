package bgp

import (
	"net/netip"
	"slices"
	"strconv"
)

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

func sortedAddrs[V any](m map[netip.Addr]V) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}
