package ipvs

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSysctlDegradation: a sysctl that already is 1 is left alone (not even
// rewritten, so a read-only /proc/sys costs nothing), one at 0 is set, and
// one that cannot be written does not stop the proxy: it is logged, counted
// and raised as a Warning Event on the node.
func TestSysctlDegradation(t *testing.T) {
	root := t.TempDir()
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("conntrack", "1") // no newline: a rewrite would add one
	write("expire_nodest_conn", "0\n")
	// A directory cannot be read or written as a file, whoever we are.
	if err := os.Mkdir(filepath.Join(root, "expire_quiescent_template"), 0o755); err != nil {
		t.Fatal(err)
	}
	k := newFakeKernel()
	ev := &eventLog{}
	reg := prometheus.NewRegistry()
	p, err := New(Config{PlanConfig: PlanConfig{NodeName: thisNode}, IPVS: k, Addresses: k.addresses(),
		SysctlRoot: root, Events: ev, Registerer: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("a sysctl that cannot be set stopped the proxy: %v", err)
	}
	defer p.Close()

	for name, want := range map[string]string{"conntrack": "1", "expire_nodest_conn": "1\n"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	if got := testutil.ToFloat64(p.metrics.sysctlsUnset); got != 1 {
		t.Errorf("nfrouter_ipvs_sysctls_unset = %v, want 1", got)
	}
	if got := testutil.ToFloat64(p.metrics.sysctlFailures.WithLabelValues("net.ipv4.vs.expire_quiescent_template")); got != 1 {
		t.Errorf("failures counted for expire_quiescent_template: %v, want 1", got)
	}
	if len(ev.events) != 1 {
		t.Fatalf("events %+v, want one", ev.events)
	}
	e := ev.events[0]
	if e.svc.Name != "node/"+thisNode || e.kind != "Warning" || e.reason != "SysctlNotSet" ||
		!strings.Contains(e.message, "net.ipv4.vs.expire_quiescent_template") {
		t.Errorf("event %+v, want a Warning SysctlNotSet on the node naming the sysctl", e)
	}
}
