package bgp

import (
	"fmt"
	"net/netip"
	"strings"
)

// tcpEstablished finds an ESTABLISHED (state 01) connection between a and b
// with port on either end in the text of /proc/net/tcp (IPv4 addresses) or
// /proc/net/tcp6 (IPv6 addresses).
func tcpEstablished(procTCP string, a, b netip.Addr, port uint16) bool {
	// The kernel prints an address as 32-bit words in host byte order
	// (little-endian here), each as 8 hex digits.
	hex := func(x netip.Addr) string {
		v := x.AsSlice()
		var s strings.Builder
		for w := 0; w < len(v); w += 4 {
			fmt.Fprintf(&s, "%02X%02X%02X%02X", v[w+3], v[w+2], v[w+1], v[w])
		}
		return s.String()
	}
	p := fmt.Sprintf("%04X", port)
	for _, line := range strings.Split(procTCP, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "01" {
			continue
		}
		l, r := f[1], f[2]
		if strings.HasPrefix(l, hex(a)+":") && strings.HasPrefix(r, hex(b)+":") &&
			(strings.HasSuffix(l, ":"+p) || strings.HasSuffix(r, ":"+p)) {
			return true
		}
	}
	return false
}
