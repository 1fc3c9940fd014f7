package nft

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/internal/fixture"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// envParentMountNS marks the child process of TestKernelBridgeNFReadOnly and
// holds its parent's mount namespace, which the child must not be in.
const envParentMountNS = "NFROUTER_TEST_PARENT_MOUNT_NS"

// TestKernelBridgeNFReadOnly runs the firewall where /proc/sys is read-only,
// as a container runtime mounts it for the DaemonSet's container. On a node
// whose bridge-nf-call sysctls are 0 the sync still succeeds and programs
// the table, and the sysctls that cannot be set are reported: a Warning
// Event on the node, the nfrouter_firewall_sysctls_unset gauge and the
// failure counter. On a node where they already are 1 nothing is reported.
//
// The read-only /proc/sys is a bind mount in a mount namespace of a child
// process (this test binary run again), never in the machine's.
func TestKernelBridgeNFReadOnly(t *testing.T) {
	kerneltest.RequireRoot(t)
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	parent, inChild := os.LookupEnv(envParentMountNS)
	if !inChild {
		runInMountNamespace(t, self)
		return
	}
	if parent == self {
		t.Fatalf("child still in the parent's mount namespace %s: refusing to mount anything", self)
	}

	cidr := netip.MustParsePrefix("10.244.1.0/24")
	off := netnstest.NewBridgeNode(t, cidr)
	on := netnstest.NewBridgeNode(t, cidr)
	if err := setSysctls(off, "0"); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			kerneltest.MissingFeature(t, "br_netfilter", err)
		}
		t.Fatal(err)
	}
	if err := setSysctls(on, "1"); err != nil {
		t.Fatal(err)
	}
	readOnlyProcSys(t)
	if err := setSysctls(off, "1"); !errors.Is(err, unix.EROFS) {
		t.Fatalf("writing a sysctl under the read-only /proc/sys: %v, want EROFS", err)
	}

	st := fixture.New()
	if err := st.Apply([]byte(`
kind: NetworkPolicy
metadata: {name: deny, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress]}`)); err != nil {
		t.Fatal(err)
	}
	st.Namespaces = st.Namespaces.With("x", &model.Namespace{Name: "x"})

	for _, tc := range []struct {
		name      string
		node      *netnstest.Node
		wantUnset int
	}{
		{"sysctls-at-0", off, 2},
		{"sysctls-at-1", on, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			events := &recordedEvents{}
			b := newBackendIn(t, tc.node.NS, func(tbl *ruleset.Table) Part {
				f, err := NewFirewall(tbl, FirewallConfig{NodeName: "node-a", NetNSFd: int(tc.node.NS),
					Registerer: reg, Events: events})
				if err != nil {
					t.Fatal(err)
				}
				return f
			})
			const checks = 2 // the second full sync counts again but reports nothing new
			for range checks {
				syncOK(t, b, st.State, &model.Changes{Full: true})
			}
			if out := nftIn(t, tc.node.NS, "", "list", "table", TableFamily, TableName); !strings.Contains(out, "chain") {
				t.Errorf("table not programmed:\n%s", out)
			}
			if got := sumOf(t, reg, "nfrouter_firewall_sysctls_unset"); got != float64(tc.wantUnset) {
				t.Errorf("nfrouter_firewall_sysctls_unset = %v, want %d", got, tc.wantUnset)
			}
			if got := sumOf(t, reg, "nfrouter_firewall_sysctl_failures_total"); got != float64(checks*tc.wantUnset) {
				t.Errorf("nfrouter_firewall_sysctl_failures_total sums to %v, want %d", got, checks*tc.wantUnset)
			}
			got := events.list()
			if len(got) != tc.wantUnset {
				t.Fatalf("events %q, want %d (one per sysctl, not repeated)", got, tc.wantUnset)
			}
			for _, e := range got {
				if !strings.HasPrefix(e, "node-a Warning SysctlNotSet") || !strings.Contains(e, "read-only file system") {
					t.Errorf("event %q, want a Warning SysctlNotSet on node-a naming the read-only file system", e)
				}
			}
		})
	}
}

// runInMountNamespace runs this test again in a child process with a mount
// namespace of its own (Go makes its mounts private) and fails with it.
func runInMountNamespace(t *testing.T, parentNS string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envParentMountNS+"="+parentNS)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	t.Logf("child process in a mount namespace of its own:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		t.Skip("skipped in the child process")
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatal("the child did not run the test")
	}
}

// readOnlyProcSys bind-mounts /proc/sys read-only over itself in the
// process's (private) mount namespace.
func readOnlyProcSys(t *testing.T) {
	if err := unix.Mount("/proc/sys", "/proc/sys", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind /proc/sys: %v", err)
	}
	if err := unix.Mount("", "/proc/sys", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount /proc/sys read-only: %v", err)
	}
}

// sumOf adds up every series of a gauge or counter family in reg (0 when
// it has none yet).
func sumOf(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum
}

// recordedEvents is an EventRecorder that keeps what it is given.
type recordedEvents struct {
	mu     sync.Mutex
	events []string
}

func (r *recordedEvents) PolicyEvent(p model.PolicyKey, eventType, reason, message string) {
	r.add(fmt.Sprintf("%s %s %s %s", p, eventType, reason, message))
}

func (r *recordedEvents) NodeEvent(node, eventType, reason, message string) {
	r.add(fmt.Sprintf("%s %s %s %s", node, eventType, reason, message))
}

func (r *recordedEvents) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recordedEvents) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}
