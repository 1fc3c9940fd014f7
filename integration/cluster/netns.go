package cluster

import (
	"fmt"
	"os"

	"github.com/vishvananda/netns"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

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
