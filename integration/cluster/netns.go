package cluster

import (
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// newNetNS makes an anonymous network namespace with lo up. It lives as long
// as the returned handle (and whatever runs or listens inside it) is open.
func newNetNS() (netns.NsHandle, error) {
	var ns netns.NsHandle
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine instead of going
		// back to the runtime inside the new namespace.
		runtime.LockOSThread()
		var err error
		if ns, err = netns.New(); err != nil {
			done <- fmt.Errorf("new network namespace: %w", err)
			return
		}
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			ns.Close()
			err = fmt.Errorf("new network namespace: lo up: %w", err)
		}
		done <- err
	}()
	return ns, <-done
}

// sysctl writes a value under /proc/sys in namespace ns.
func sysctl(ns netns.NsHandle, values map[string]string) error {
	return kerneltest.Do(ns, func() error {
		for k, v := range values {
			if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
				return fmt.Errorf("sysctl %s: %w", k, err)
			}
		}
		return nil
	})
}
