package model

import (
	"fmt"
	"net/netip"
	"slices"
)

// parseAddrs parses IP address strings, dropping empty ones, and returns them
// sorted so that equal sets compare equal.
func parseAddrs(in []string) ([]netip.Addr, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]netip.Addr, 0, len(in))
	for _, s := range in {
		if s == "" {
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("invalid IP address %q", s)
		}
		out = append(out, a.Unmap())
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out), nil
}

// parsePrefix parses a CIDR and masks it, so that 10.0.0.1/24 and 10.0.0.0/24
// are one value.
func parsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
	}
	return p.Masked(), nil
}
