package ipvs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ipvsSysctls are set to 1 in the proxy's network namespace:
//   - conntrack: keep conntrack entries for IPVS connections, so that
//     nftables NAT (masquerade) and filtering see them;
//   - expire_nodest_conn: end connections to a deleted destination at their
//     next packet instead of blackholing them;
//   - expire_quiescent_template: end persistence templates of weight-0
//     destinations, so that affinity does not pin clients to a draining one.
var ipvsSysctls = []string{"conntrack", "expire_nodest_conn", "expire_quiescent_template"}

// setSysctls writes the IPVS sysctls under root (/proc/sys/net/ipv4/vs). The
// files are per network namespace, resolved when opened: call it on the
// thread that is in the namespace to program.
func setSysctls(root string) error {
	var errs []error
	for _, name := range ipvsSysctls {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte("1\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("set %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
