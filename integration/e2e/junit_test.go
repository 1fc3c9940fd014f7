package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseJUnit(t *testing.T) {
	f, err := os.Open("testdata/junit_01.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	focus := regexp.MustCompile(`\[sig-network\] Netpol`)
	skip := regexp.MustCompile(`\[Feature:SCTPConnectivity\]`)
	results, err := ParseJUnit(f, focus, skip)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "[sig-network] Netpol NetworkPolicy between server and client should "
	want := []Result{
		{Name: prefix + "enforce policy based on Ports [Feature:NetworkPolicy] [Feature:SCTPConnectivity]", Status: Skipped,
			Cause: `left out: matches \[Feature:SCTPConnectivity\]`},
		{Name: prefix + "enforce policy to allow traffic only from a pod in a different namespace based on PodSelector and NamespaceSelector [Feature:NetworkPolicy]",
			Status: Passed, Duration: 40250 * time.Millisecond},
		{Name: prefix + "support a 'default-deny-ingress' policy [Feature:NetworkPolicy]", Status: Failed,
			Cause: "Pod x/a cannot reach y/b: connection refused", Duration: 50100 * time.Millisecond},
		{Name: prefix + "work with Ingress, Egress specified together [Feature:NetworkPolicy]", Status: Skipped,
			Cause: "Only supported for providers [gce gke] (not skeleton)", Duration: 3300 * time.Millisecond},
	}
	if len(results) != len(want) {
		t.Fatalf("got %d results, want %d: %+v", len(results), len(want), results)
	}
	for i := range want {
		if results[i] != want[i] {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, results[i], want[i])
		}
	}
}

func TestParseJUnitKeepsFailedSuiteNodes(t *testing.T) {
	const doc = `<testsuites><testsuite><testcase name="[SynchronizedBeforeSuite]" status="failed" time="600">` +
		`<failure type="failed">[FAILED] there are not ready nodes&#xA;In [SynchronizedBeforeSuite] at: x.go:1</failure></testcase></testsuite></testsuites>`
	results, err := ParseJUnit(strings.NewReader(doc), regexp.MustCompile(`Netpol`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Status != Failed || results[0].Cause != "there are not ready nodes" {
		t.Errorf("got %+v, want the failed BeforeSuite with its cause", results)
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	err := WriteTable(&b, "Netpol", []Result{
		{Name: "a passes", Status: Passed, Duration: 2 * time.Second},
		{Name: "b | pipes", Status: Skipped, Cause: "needs SCTP"},
		{Name: "c fails", Status: Failed, Cause: "timeout", Duration: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "Netpol: 3 cases, 1 passed, 1 failed, 1 skipped\n\n| Case | Result | Cause |\n|---|---|---|\n" +
		"| c fails | failed (1m0s) | timeout |\n| b \\| pipes | skipped | needs SCTP |\n| a passes | passed (2s) |  |\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestImageNamed(t *testing.T) {
	refs := parseImageList([]byte("registry.example/e2e-test-images/agnhost:2.55\nregistry.example/e2e-test-images/agnhost:2.66.1\n" +
		"registry.example/pause:3.10.1\nother.example/k8s-authenticated-test/agnhost:2.6\nregistry.example/e2e-test-images/busybox:1.37.0-1\n"))
	if got, err := ImageNamed(refs, "agnhost"); err != nil || got != "registry.example/e2e-test-images/agnhost:2.66.1" {
		t.Errorf("agnhost: %q, %v", got, err)
	}
	if got, err := ImageNamed(refs, "pause"); err != nil || got != "registry.example/pause:3.10.1" {
		t.Errorf("pause: %q, %v", got, err)
	}
	if _, err := ImageNamed(refs, "nginx"); err == nil {
		t.Error("nginx found in a list without it")
	}
}

// The CI subset selects exactly its curated cases among Netpol's, and no
// UDP or SCTP variant of them.
func TestCISuiteFocus(t *testing.T) {
	focus, _, err := Suites["ci"].Patterns()
	if err != nil {
		t.Fatal(err)
	}
	const tcp = "[sig-network] Netpol NetworkPolicy between server and client "
	for _, c := range netpolCI {
		if name := tcp + c + " [Feature:NetworkPolicy]"; !focus.MatchString(name) {
			t.Errorf("ci focus misses %q", name)
		}
	}
	for _, name := range []string{
		"[sig-network] Netpol [LinuxOnly] NetworkPolicy between server and client using UDP should support a 'default-deny-ingress' policy [Feature:NetworkPolicy]",
		tcp + "should support a 'default-deny-all' policy [Feature:NetworkPolicy]",
		tcp + "should allow ingress access from updated namespace [Feature:NetworkPolicy]",
	} {
		if focus.MatchString(name) {
			t.Errorf("ci focus selects %q", name)
		}
	}
}
