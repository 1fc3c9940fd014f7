package kerneltest

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func TestNewNetNSHasLoopbackUpAndLeavesCallerAlone(t *testing.T) {
	RequireRoot(t)
	before, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()

	ns := NewNetNS(t)
	var loUp bool
	err = Do(ns, func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		loUp = lo.Attrs().Flags&net.FlagUp != 0
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !loUp {
		t.Error("lo is down in the new namespace")
	}
	if ns.Equal(before) {
		t.Error("NewNetNS returned the caller's namespace")
	}
	after, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if !after.Equal(before) {
		t.Error("the calling goroutine's thread changed namespace")
	}
}
