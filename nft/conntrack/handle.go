package conntrack

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Handle opens a netlink handle for conntrack and addresses in network
// namespace nsFd (0: the caller's). The caller closes it.
func Handle(nsFd int) (*netlink.Handle, error) {
	if nsFd == 0 {
		h, err := netlink.NewHandle(unix.NETLINK_NETFILTER, unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("conntrack: netlink: %w", err)
		}
		return h, nil
	}
	h, err := netlink.NewHandleAt(netns.NsHandle(nsFd), unix.NETLINK_NETFILTER, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("conntrack: netlink in namespace: %w", err)
	}
	return h, nil
}

// LocalAddrs returns the addresses of the node's interfaces.
func LocalAddrs(h *netlink.Handle) (map[netip.Addr]bool, error) {
	addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("conntrack: list the node's addresses: %w", err)
	}
	out := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			out[ip.Unmap()] = true
		}
	}
	return out, nil
}

// Filter says which flows to delete. A filter may remember an error and
// match nothing after it; Err reports it after the pass.
type Filter interface {
	Match(*netlink.ConntrackFlow) bool
	Err() error
}

// Delete deletes the IPv4 and IPv6 conntrack entries f matches, in the
// namespace of h, and returns how many it deleted.
func Delete(h *netlink.Handle, f Filter) (int, error) {
	deleted := 0
	for _, fam := range []netlink.InetFamily{unix.AF_INET, unix.AF_INET6} {
		n, err := h.ConntrackDeleteFilters(netlink.ConntrackTable, fam, adapter{f})
		deleted += int(n)
		if err == nil {
			err = f.Err()
		}
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// adapter makes a Filter a netlink.CustomConntrackFilter.
type adapter struct{ f Filter }

func (a adapter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool { return a.f.Match(flow) }

var _ netlink.CustomConntrackFilter = adapter{}
