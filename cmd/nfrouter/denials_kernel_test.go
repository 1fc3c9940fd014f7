package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/nft/netpol"
	"github.com/nfrouter/nfrouter/nft/nflog"
)

// TestKernelDenialsNamesTheDroppedProbe programs the firewall of
// testdata/denials.yaml into a node namespace with `nfrouter --once`, reads
// NFLOG there as `nfrouter denials --count 1 -o json` does, sends a probe
// the policy denies, and checks that the line printed names both pods and
// the policy isolating the destination.
func TestKernelDenialsNamesTheDroppedProbe(t *testing.T) {
	node := netnstest.NewNode(t) // skips without root
	const manifests = "testdata/denials.yaml"
	a := node.AddPod("x/a", netip.MustParseAddr("10.244.1.1"))
	a.Serve(t, "tcp", 80)
	b := node.AddPod("y/b", netip.MustParseAddr("10.244.1.2"))
	runOnceIn(t, node.NS, "--manifests", manifests, "--hostname-override", "node-a",
		"--run-service-proxy=false", "--run-router=false", "--once", "--log-format", "json")

	o, err := parseDenialsOptions([]string{"--manifests", manifests, "--count", "1", "-o", "json", "--timeout", "1m"})
	if err != nil {
		t.Fatal(err)
	}
	var out, logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- kerneltest.Do(node.NS, func() error {
			return watchDenials(t.Context(), o, &out, log, func() { close(ready) })
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("denials stopped before it listened: %v\n%s", err, logs.String())
	}
	if b.Probe(t, "tcp", a.IPs[0], 80) {
		t.Fatal("probe y/b -> x/a tcp/80 passed a policy that denies x/a all ingress")
	}
	if err := <-done; err != nil {
		t.Fatalf("denials: %v\n%s", err, logs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || lines[0] == "" {
		t.Fatalf("denials printed %d lines, want the one dropped packet:\n%s\nlog:\n%s", len(lines), out.String(), logs.String())
	}
	var d denial
	if err := json.Unmarshal([]byte(lines[0]), &d); err != nil {
		t.Fatalf("%v: %s", err, lines[0])
	}
	t.Logf("denials printed: %s", lines[0])
	want := []isolation{{Policy: "x/deny-ingress", Pod: "x/a", Direction: "ingress"}}
	if d.From.Pod != "y/b" || d.From.IP != b.IPs[0] || d.To.Pod != "x/a" || d.To.IP != a.IPs[0] ||
		d.Protocol != "TCP" || d.Port != 80 || d.Hook != "forward" || !slices.Equal(d.Isolating, want) ||
		!strings.HasPrefix(d.Prefix, "nfrouter deny ingress x") {
		t.Errorf("denials printed %+v; want y/b -> x/a TCP/80 at forward, logged as a denial of x's ingress, isolated by %+v", d, want)
	}
}

// TestKernelDenialsTimeout: with nothing dropped, `denials --timeout` ends
// quietly with the table's header, and a second reader of the same group is
// refused with a message that says why.
func TestKernelDenialsTimeout(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	holder := make(chan struct{})
	release := make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- kerneltest.Do(ns, func() error {
			r, err := nflog.Listen(netpol.NFLogGroup, 0)
			if err != nil {
				close(holder)
				return err
			}
			close(holder)
			<-release
			return r.Close()
		})
	}()
	<-holder
	var code int
	var stdout, stderr string
	err := kerneltest.Do(ns, func() error {
		code, stdout, stderr = runCommand(t, "denials", "--manifests", "testdata/denials.yaml", "--timeout", "100ms", "--log-format", "json")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if code != exitFailure || !strings.Contains(stderr, "another listener holds it") {
		t.Errorf("second reader of the group: exit %d, stderr %q; want a failure naming the other listener", code, stderr)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	err = kerneltest.Do(ns, func() error {
		code, stdout, stderr = runCommand(t, "denials", "--manifests", "testdata/denials.yaml", "--timeout", "100ms", "--log-format", "json")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if code != exitOK || !strings.HasPrefix(stdout, "TIME") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("denials --timeout with nothing dropped: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
