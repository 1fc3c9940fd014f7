package ipvs

import (
	"os"
	"path/filepath"
	"strings"
)

// ipvsSysctls are set to 1 in the proxy's network namespace:
//   - conntrack: keep conntrack entries for IPVS connections, so that
//     nftables NAT (masquerade) and filtering see them;
//   - expire_nodest_conn: end connections to a deleted destination at their
//     next packet instead of blackholing them;
//   - expire_quiescent_template: end persistence templates of weight-0
//     destinations, so that affinity does not pin clients to a draining one.
var ipvsSysctls = []string{"conntrack", "expire_nodest_conn", "expire_quiescent_template"}

// sysctlFailure is an IPVS sysctl that is not 1 and could not be set.
type sysctlFailure struct {
	Name string // as sysctl(8) names it: net.ipv4.vs.conntrack
	Err  error
}

// setSysctls sets the IPVS sysctls under root (/proc/sys/net/ipv4/vs) to 1
// and returns those that are not 1 and cannot be written. A sysctl that
// already is 1 is not written, so that a read-only /proc/sys (as container
// runtimes mount it) costs nothing where the node has them set. The files
// are per network namespace, resolved when opened: call it on the thread
// that is in the namespace to program.
func setSysctls(root string) []sysctlFailure {
	var failed []sysctlFailure
	for _, name := range ipvsSysctls {
		p := filepath.Join(root, name)
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == "1" {
			continue
		}
		if err := os.WriteFile(p, []byte("1\n"), 0o644); err != nil {
			failed = append(failed, sysctlFailure{Name: "net.ipv4.vs." + name, Err: err})
		}
	}
	return failed
}
