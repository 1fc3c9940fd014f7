package vmsmoke

import (
	"errors"
	"testing"

	"github.com/cloudflare/ipvs"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// ipvsAt returns an IPVS client bound to ns; a kernel without IPVS ends the
// test (see kerneltest.MissingFeature).
func ipvsAt(t *testing.T, ns netns.NsHandle) ipvs.Client {
	t.Helper()
	var c ipvs.Client
	err := kerneltest.Do(ns, func() error {
		var err error
		c, err = ipvs.New()
		return err
	})
	if err != nil {
		kerneltest.MissingFeature(t, "IPVS", err)
	}
	return c
}

// addLink adds l through h; a kernel without the link type ends the test.
func addLink(t *testing.T, h *netlink.Handle, l netlink.Link) {
	t.Helper()
	err := h.LinkAdd(l)
	if errors.Is(err, unix.EOPNOTSUPP) {
		kerneltest.MissingFeature(t, l.Type()+" interfaces", err)
	}
	if err != nil {
		t.Fatalf("add %s link %s: %v", l.Type(), l.Attrs().Name, err)
	}
}
