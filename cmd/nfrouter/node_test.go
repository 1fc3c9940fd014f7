package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnableCNIWritesThePodCIDRs runs the command once with only
// --enable-cni on a manifest of this node: the conflist holds its pod CIDRs.
// No kernel is touched, so it needs no root.
func TestEnableCNIWritesThePodCIDRs(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "node.yaml")
	if err := os.WriteFile(manifest, []byte(`
apiVersion: v1
kind: Node
metadata: {name: node-a}
spec: {podCIDR: 10.244.7.0/24, podCIDRs: [10.244.7.0/24, "fd00:7::/64"]}
status: {addresses: [{type: InternalIP, address: 192.168.50.17}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "net.d", "10-kuberouter.conflist")
	code, _, stderr := runCommand(t, "--manifests", manifest, "--hostname-override", "node-a", "--once",
		"--run-firewall=false", "--run-service-proxy=false", "--run-router=false",
		"--enable-cni", "--cni-conf-file", conf)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"bridge": "kube-bridge"`, `"subnet": "10.244.7.0/24"`, `"subnet": "fd00:7::/64"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s:\n%s", conf, want, b)
		}
	}
}

func TestCNIConfFileMustBeAbsolute(t *testing.T) {
	code, _, stderr := runCommand(t, "--enable-cni", "--cni-conf-file", "net.d/x.conflist")
	if code != exitUsage || !strings.Contains(stderr, "--cni-conf-file must be an absolute path") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
