package bgp

import (
	"fmt"
	"net/netip"
	"strings"
)

// tcpEstablished finds an ESTABLISHED (state 01) connection between a and b
// with port on either end in the text of /proc/net/tcp.
func tcpEstablished(procTCP string, a, b netip.Addr, port uint16) bool {
	hex := func(x netip.Addr) string {
		v := x.As4()
		return fmt.Sprintf("%02X%02X%02X%02X", v[3], v[2], v[1], v[0])
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
