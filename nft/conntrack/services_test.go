package conntrack

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

func TestServiceFlowsStale(t *testing.T) {
	ap := netip.MustParseAddrPort
	flows := ServiceFlows{
		{unix.IPPROTO_UDP, ap("10.96.0.10:53")}:   {ap("10.244.1.11:5353"), ap("10.244.1.12:5353")},
		{unix.IPPROTO_UDP, ap("10.96.0.11:53")}:   nil, // gone, or no endpoint
		{unix.IPPROTO_SCTP, ap("[fd00::1]:9000")}: {ap("[fd00:1::11]:9000")},
	}
	for _, c := range []struct {
		name        string
		proto       uint8
		dst, reply  string
		wantDeleted bool
	}{
		{"to a current endpoint", unix.IPPROTO_UDP, "10.96.0.10:53", "10.244.1.12:5353", false},
		{"to an endpoint that went", unix.IPPROTO_UDP, "10.96.0.10:53", "10.244.1.13:5353", true},
		{"to an endpoint's address on another port", unix.IPPROTO_UDP, "10.96.0.10:53", "10.244.1.11:53", true},
		{"not translated, endpoints now", unix.IPPROTO_UDP, "10.96.0.10:53", "10.96.0.10:53", true},
		{"not translated, still no endpoint", unix.IPPROTO_UDP, "10.96.0.11:53", "10.96.0.11:53", false},
		{"translated, address without endpoints", unix.IPPROTO_UDP, "10.96.0.11:53", "10.244.1.11:5353", true},
		{"another port of the address", unix.IPPROTO_UDP, "10.96.0.10:54", "10.244.1.13:5353", false},
		{"another protocol", unix.IPPROTO_SCTP, "10.96.0.10:53", "10.244.1.13:5353", false},
		{"SCTP endpoint that went", unix.IPPROTO_SCTP, "[fd00::1]:9000", "[fd00:1::12]:9000", true},
		{"not a service", unix.IPPROTO_UDP, "192.168.1.1:53", "192.168.1.1:53", false},
	} {
		if got := flows.Stale(c.proto, ap(c.dst), ap(c.reply)); got != c.wantDeleted {
			t.Errorf("%s: stale = %v, want %v", c.name, got, c.wantDeleted)
		}
	}
}
