package kerneltest

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// loopbackUp brings lo of the current thread's namespace up. IPVS refuses
// real servers with EINVAL while lo is down.
func loopbackUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}
