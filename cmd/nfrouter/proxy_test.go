package main

import (
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cloudflare/ipvs"
	"github.com/spf13/pflag"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

func TestProxyFlagsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--service-proxy", "iptables"}, `--service-proxy must be ipvs, nftables or auto, not "iptables"`},
		{[]string{"--ipvs-graceful-period", "-1s"}, "--ipvs-graceful-period must not be negative"},
		{[]string{"--service-node-port-range", "32767-30000"}, "--service-node-port-range: want FIRST-LAST"},
		{[]string{"--nodeport-addresses", "eth0"}, `--nodeport-addresses: netip.ParsePrefix("eth0")`},
		{[]string{"--nodeport-addresses", "primary,10.0.0.0/8"}, `--nodeport-addresses must be "primary" alone or a list of CIDRs, not "primary,10.0.0.0/8"`},
		{[]string{"--nodeport-addresses", "10.0.0.1/8"}, "--nodeport-addresses: 10.0.0.1/8 has host bits set (did you mean 10.0.0.0/8?)"},
		{[]string{"--nodeport-addresses", "primary", "--nodeport-bindon-all-ip"}, "--nodeport-addresses and --nodeport-bindon-all-ip=true contradict each other"},
	} {
		code, _, stderr := runCommand(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
	for _, tc := range []struct {
		args  []string
		given bool
		cidrs []netip.Prefix
	}{
		{nil, false, nil},
		{[]string{"--nodeport-addresses", "primary"}, true, nil},
		{[]string{"--nodeport-addresses", "192.168.0.0/16, fd00::/64"}, true, []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fd00::/64")}},
	} {
		var p proxyOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		p.addFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if errs := p.validate(); len(errs) != 0 || p.nodePortAddressesGiven != tc.given || !slices.Equal(p.nodePortPrefixes, tc.cidrs) {
			t.Errorf("%v: given %v, CIDRs %v, errors %v; want %v, %v", tc.args, p.nodePortAddressesGiven, p.nodePortPrefixes, errs, tc.given, tc.cidrs)
		}
	}
	for _, s := range []string{"30000-32767", "30000:32767"} {
		if lo, hi, err := parsePortRange(s); err != nil || lo != 30000 || hi != 32767 {
			t.Errorf("parsePortRange(%q) = %d, %d, %v", s, lo, hi, err)
		}
	}
}

func TestProxyModeChoice(t *testing.T) {
	noIPVS := func() error { return errors.New("no IPVS genetlink family") }
	haveIPVS := func() error { return nil }
	for _, tc := range []struct {
		requested string
		probe     func() error
		want, why string
	}{
		{"ipvs", noIPVS, "ipvs", "requested"},
		{"nftables", haveIPVS, "nftables", "requested"},
		{"auto", haveIPVS, "ipvs", "this kernel offers IPVS"},
		{"auto", noIPVS, "nftables", "this kernel offers no IPVS (no IPVS genetlink family)"},
	} {
		got, why := proxyMode(tc.requested, tc.probe)
		if got != tc.want || why != tc.why {
			t.Errorf("proxyMode(%q) = %q, %q; want %q, %q", tc.requested, got, why, tc.want, tc.why)
		}
	}
}

// TestOnceProgramsServices is the command form of issue 6: --manifests …
// --service-proxy=ipvs --once programs the services of the manifests into
// the current network namespace and exits 0. It needs IPVS: on the host it
// skips; run it in the VM tier with
//
//	go run ./integration/vm/cmd/vmtest -kernels 6.12 ./cmd/nfrouter -- -test.run TestOnceProgramsServices -test.v
func TestOnceProgramsServices(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	var c ipvs.Client
	if err := kerneltest.Do(ns, func() (err error) { c, err = ipvs.New(); return err }); err != nil {
		kerneltest.MissingFeature(t, "IPVS", err)
	}
	stderr := runOnceIn(t, ns, "--manifests", filepath.Join("..", "..", "ipvs", "testdata", "manifests"),
		"--hostname-override", "node-1", "--run-firewall=false", "--run-service-proxy=true", "--service-proxy=ipvs",
		"--run-router=false", "--once", "--log-format", "json")
	svcs, err := c.Services()
	if err != nil {
		t.Fatalf("list IPVS services: %v", err)
	}
	got := map[netip.AddrPort]string{}
	for _, s := range svcs {
		got[netip.AddrPortFrom(s.Address, s.Port)] = s.Scheduler
	}
	want := map[netip.AddrPort]string{
		netip.MustParseAddrPort("10.96.0.10:80"):      "lc",
		netip.MustParseAddrPort("192.168.1.10:30080"): "lc",
		netip.MustParseAddrPort("10.96.0.53:53"):      "rr",
		netip.MustParseAddrPort("10.96.0.77:8443"):    "rr",
	}
	if len(got) != len(want) {
		t.Errorf("IPVS services after --once: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("IPVS service %s has scheduler %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if !strings.Contains(stderr, `"mode":"ipvs"`) {
		t.Errorf("the log does not name the chosen proxy mode:\n%s", stderr)
	}
}
