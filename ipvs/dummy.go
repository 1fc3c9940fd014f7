package ipvs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DummyInterface is the interface nfrouter creates and owns for the virtual
// addresses, named as kube-router names it so that nodes can switch.
const DummyInterface = "kube-dummy-if"

// dummyLink implements Addresses with rtnetlink.
type dummyLink struct {
	h    *netlink.Handle
	name string
	// index is the interface's index once Ensure found or made it.
	index int
}

func newDummyLink(h *netlink.Handle, name string) *dummyLink { return &dummyLink{h: h, name: name} }

func (l *dummyLink) Ensure() error {
	link, err := l.h.LinkByName(l.name)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		if err := l.h.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: l.name}}); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create %s: %w", l.name, err)
		}
		link, err = l.h.LinkByName(l.name)
	}
	if err != nil {
		return fmt.Errorf("find %s: %w", l.name, err)
	}
	if link.Type() != "dummy" {
		return fmt.Errorf("%s exists but is a %s interface, not a dummy one", l.name, link.Type())
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		// Local routes for the addresses exist only while the link is up.
		if err := l.h.LinkSetUp(link); err != nil {
			return fmt.Errorf("set %s up: %w", l.name, err)
		}
	}
	l.index = link.Attrs().Index
	return nil
}

func (l *dummyLink) link() (netlink.Link, error) {
	if l.index == 0 {
		if err := l.Ensure(); err != nil {
			return nil, err
		}
	}
	return &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: l.name, Index: l.index}}, nil
}

func (l *dummyLink) List() ([]netip.Addr, error) {
	link, err := l.link()
	if err != nil {
		return nil, err
	}
	list, err := l.h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("list addresses of %s: %w", l.name, err)
	}
	var out []netip.Addr
	for _, a := range list {
		addr, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		addr = addr.Unmap()
		if addr.IsLinkLocalUnicast() {
			continue // the kernel's own, for IPv6
		}
		out = append(out, addr)
	}
	return out, nil
}

func (l *dummyLink) nlAddr(a netip.Addr) *netlink.Addr {
	bits := a.BitLen()
	na := &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, bits)}}
	if a.Is4() {
		// Never picked as the source of the node's own traffic.
		na.Scope = unix.RT_SCOPE_LINK
	} else {
		na.Flags = unix.IFA_F_NODAD
	}
	return na
}

func (l *dummyLink) Add(a netip.Addr) error {
	link, err := l.link()
	if err != nil {
		return err
	}
	return l.h.AddrAdd(link, l.nlAddr(a))
}

func (l *dummyLink) Delete(a netip.Addr) error {
	link, err := l.link()
	if err != nil {
		return err
	}
	return l.h.AddrDel(link, l.nlAddr(a))
}
