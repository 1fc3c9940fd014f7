package main

import (
	"encoding/binary"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/nft/svcproxy"
)

// TestOnceProgramsServicesWithNFTables is the command form of issue 6 in
// nftables mode: --manifests … --service-proxy=nftables --once programs the
// services of the manifests into the current network namespace and exits 0.
func TestOnceProgramsServicesWithNFTables(t *testing.T) {
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	stderr := runOnceIn(t, ns, "--manifests", filepath.Join("..", "..", "ipvs", "testdata", "manifests"),
		"--hostname-override", "node-1", "--run-firewall=false", "--run-service-proxy=true", "--service-proxy=nftables",
		"--run-router=false", "--once", "--log-format", "json")
	if !strings.Contains(stderr, `"mode":"nftables"`) {
		t.Errorf("the log does not name the chosen proxy mode:\n%s", stderr)
	}
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseLasting()
	// Key: address, protocol and port (each in 32-bit words), slot.
	var got []string
	for _, proto := range svcproxy.Protocols {
		set, err := conn.GetSetByName(&nftables.Table{Family: nftables.TableFamilyINet, Name: "nfrouter"}, svcproxy.EndpointsMap(proto, false))
		if err != nil {
			t.Fatalf("endpoint map after --once: %v", err)
		}
		els, err := conn.GetSetElements(set)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range els {
			a, _ := netip.AddrFromSlice(e.Key[:4])
			got = append(got, netip.AddrPortFrom(a, binary.BigEndian.Uint16(e.Key[8:10])).String())
		}
	}
	slices.Sort(got)
	got = slices.Compact(got)
	// The web service on its cluster IP and its NodePort on node-1's
	// address, and DNS; a headless service is never proxied.
	for _, want := range []string{"10.96.0.10:80", "192.168.1.10:30080", "10.96.0.53:53"} {
		if !slices.Contains(got, want) {
			t.Errorf("service %s has no endpoint slot after --once; the map holds %v", want, got)
		}
	}
}
