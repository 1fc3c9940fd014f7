package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/nft/nflog"
)

// TestDenialTableNamesPodsAndPolicies formats a logged packet against the
// model of testdata/denials.yaml, without a kernel.
func TestDenialTableNamesPodsAndPolicies(t *testing.T) {
	store, err := openModel(context.Background(), sourceOptions{manifests: "testdata/denials.yaml"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	names := (&podIndex{}).update(store)
	var out bytes.Buffer
	printDenialHeader(&out)
	for _, pkt := range []nflog.Packet{
		{Prefix: "nfrouter deny ingress x: ", Hook: 2, Src: netip.MustParseAddr("10.244.1.2"), Dst: netip.MustParseAddr("10.244.1.1"), Proto: 6, SPort: 40000, DPort: 80},
		{Hook: 2, Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("10.244.1.1"), Proto: 17, DPort: 53},
	} {
		pkt.Received = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		if err := printDenial(&out, describeDenial(pkt, names), "table"); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("want a header and two lines:\n%s", out.String())
	}
	for i, want := range [][]string{
		{"03:04:05.000", "nfrouter deny ingress x  ", "TCP/80", "y/b (10.244.1.2)", "x/a (10.244.1.1)", "ingress of x/a: x/deny-ingress"},
		{"UDP/53", "192.0.2.1", "x/a (10.244.1.1)", "ingress of x/a: x/deny-ingress"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("line %d lacks %q: %s", i+1, w, lines[i+1])
			}
		}
	}
}

func TestDenialsUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--count", "-1"}, "--count must not be negative"},
		{[]string{"-o", "yaml"}, "--output must be table or json"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		code, stdout, stderr := runCommand(t, append([]string{"denials"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
	code, stdout, _ := runCommand(t, "denials", "--help")
	if code != exitOK || !strings.Contains(stdout, "NFLOG group") || !strings.Contains(stdout, "--count") {
		t.Errorf("denials --help: exit %d, %q", code, stdout)
	}
}
