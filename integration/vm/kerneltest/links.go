package kerneltest

import (
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Handle returns an rtnetlink handle working in ns, closed when the test ends.
// It opens only the rtnetlink socket (netlink's default handle also opens xfrm
// and nfnetlink sockets, which a guest kernel may lack).
func Handle(t testing.TB, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	return h
}

// AddDummy adds a dummy interface named name; a kernel without dummy
// interfaces ends the test as MissingFeature says.
func AddDummy(t testing.TB, h *netlink.Handle, name string) {
	t.Helper()
	if err := h.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		MissingFeature(t, "dummy interfaces", err)
	}
}

// LinkUp adds addr (CIDR notation) to the link named name and sets it up.
func LinkUp(t testing.TB, h *netlink.Handle, name, addr string) netlink.Link {
	t.Helper()
	link, err := h.LinkByName(name)
	if err != nil {
		t.Fatalf("find %s: %v", name, err)
	}
	a, err := netlink.ParseAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddrAdd(link, a); err != nil {
		t.Fatalf("add %s to %s: %v", addr, name, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatalf("set %s up: %v", name, err)
	}
	return link
}
