package conntrack

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ServiceAddr is one service address, transport protocol (IPPROTO_UDP or
// IPPROTO_SCTP) and port, as a client sends to it.
type ServiceAddr struct {
	Proto uint8
	Addr  netip.AddrPort
}

// ServiceFlows are UDP and SCTP service addresses with the endpoints each
// one translates new flows to now (sorted, or small). An address that has
// gone is listed without endpoints: its translated flows are all stale.
type ServiceFlows map[ServiceAddr][]netip.AddrPort

// Stale reports whether a flow is stale: its original destination is a
// service address, and it is translated to an endpoint the address no
// longer has, or not translated although the address has endpoints now (it
// was rejected, or sent on, before they came).
func (s ServiceFlows) Stale(proto uint8, dst, replySrc netip.AddrPort) bool {
	eps, ok := s[ServiceAddr{proto, dst}]
	if !ok {
		return false
	}
	if replySrc == dst {
		return len(eps) > 0
	}
	return !slices.Contains(eps, replySrc)
}

// DeleteStaleServiceFlows deletes, in the namespace of h, the conntrack
// entries of flows that flows says are stale, and returns how many it
// deleted. It passes over the table once per family.
func DeleteStaleServiceFlows(h *netlink.Handle, flows ServiceFlows) (int, error) {
	if len(flows) == 0 {
		return 0, nil
	}
	n, err := Delete(h, serviceFilter(flows))
	if err != nil {
		return n, fmt.Errorf("delete stale conntrack entries of service flows: %w", err)
	}
	return n, nil
}

type serviceFilter ServiceFlows

func (f serviceFilter) Match(flow *netlink.ConntrackFlow) bool {
	proto := flow.Forward.Protocol
	if proto != unix.IPPROTO_UDP && proto != unix.IPPROTO_SCTP {
		return false
	}
	dst, ok1 := addrPort(flow.Forward.DstIP, flow.Forward.DstPort)
	reply, ok2 := addrPort(flow.Reverse.SrcIP, flow.Reverse.SrcPort)
	return ok1 && ok2 && ServiceFlows(f).Stale(proto, dst, reply)
}

func (serviceFilter) Err() error { return nil }

func addrPort(ip []byte, port uint16) (netip.AddrPort, bool) {
	a, ok := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(a.Unmap(), port), ok
}
