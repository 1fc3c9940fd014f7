package ipvs

import (
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/cloudflare/ipvs"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Cleanup removes, in the network namespace of the calling thread, what the
// IPVS proxy programs: the IPVS services it owns (an address on
// kube-dummy-if, or a port in nodePortMin..nodePortMax on an address of
// another interface of the node, as after a restart) and kube-dummy-if with
// its addresses. It returns one line per object removed: nothing on a second
// run. Other IPVS services, fwmark services included, are not touched; a
// kernel without IPVS has no services to remove.
func Cleanup(nodePortMin, nodePortMax uint16) ([]string, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open rtnetlink: %w", err)
	}
	defer h.Close()
	dummy, vips, nodeAddrs, err := cleanupAddrs(h)
	if err != nil {
		return nil, err
	}

	var removed []string
	if c, err := ipvs.New(); err == nil {
		if cl, ok := c.(io.Closer); ok {
			defer cl.Close()
		}
		services, err := dumpClient{c}.Services()
		if err != nil {
			return nil, fmt.Errorf("list IPVS services: %w", err)
		}
		for _, s := range services {
			if s.FWMark != 0 {
				continue
			}
			k := keyOf(s.Service)
			nodePort := nodeAddrs[k.Addr] && k.Port >= nodePortMin && k.Port <= nodePortMax
			if !vips[k.Addr] && !nodePort {
				continue
			}
			if err := c.RemoveService(s.Service); err != nil && !isGone(err) {
				return removed, fmt.Errorf("remove IPVS service %s: %w", k, err)
			}
			removed = append(removed, "IPVS service "+k.String())
		}
	}
	if dummy != nil {
		if err := h.LinkDel(dummy); err != nil {
			return removed, fmt.Errorf("remove interface %s: %w", DummyInterface, err)
		}
		removed = append(removed, fmt.Sprintf("interface %s (%d virtual addresses)", DummyInterface, len(vips)))
	}
	return removed, nil
}

// cleanupAddrs returns kube-dummy-if (nil when missing) with its addresses,
// and the addresses of every other interface.
func cleanupAddrs(h *netlink.Handle) (dummy netlink.Link, vips, nodeAddrs map[netip.Addr]bool, err error) {
	vips, nodeAddrs = map[netip.Addr]bool{}, map[netip.Addr]bool{}
	link, err := h.LinkByName(DummyInterface)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
	case err != nil:
		return nil, nil, nil, fmt.Errorf("find %s: %w", DummyInterface, err)
	case link.Type() != "dummy":
		return nil, nil, nil, fmt.Errorf("%s is a %s interface, not nfrouter's dummy one: leaving it", DummyInterface, link.Type())
	default:
		dummy = link
	}
	addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		if dummy != nil && a.LinkIndex == dummy.Attrs().Index {
			if !ip.IsLinkLocalUnicast() {
				vips[ip.Unmap()] = true
			}
			continue
		}
		nodeAddrs[ip.Unmap()] = true
	}
	return dummy, vips, nodeAddrs, nil
}
