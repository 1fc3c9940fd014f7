package ipvs

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
)

// TestKernelCleanupRemovesOursOnly programs every shape of service, next to
// a foreign dummy interface carrying the node's addresses, foreign IPVS
// services (one on a node address outside the NodePort range) and a foreign
// route; Cleanup returns the namespace to what it was, object by object,
// and a second run finds nothing.
func TestKernelCleanupRemovesOursOnly(t *testing.T) {
	kp := newKernelProxy(t, 0)
	h := kerneltest.Handle(t, kp.ns)
	kerneltest.AddDummy(t, h, "eth0")
	eth0, err := h.LinkByName("eth0")
	mustNoErr(t, err, "find eth0")
	mustNoErr(t, h.AddrAdd(eth0, kerneltest.Addr(netip.MustParseAddr("192.168.1.10"), 24)), "node IPv4 address")
	mustNoErr(t, h.AddrAdd(eth0, kerneltest.Addr(netip.MustParseAddr("fd00:1::10"), 64)), "node IPv6 address")
	mustNoErr(t, h.LinkSetUp(eth0), "eth0 up")
	mustNoErr(t, h.RouteAdd(&netlink.Route{Dst: &net.IPNet{IP: net.IPv4(10, 99, 0, 0), Mask: net.CIDRMask(24, 32)},
		Gw: net.IPv4(192, 168, 1, 1), LinkIndex: eth0.Attrs().Index, Protocol: unix.RTPROT_STATIC}), "foreign route")
	k := kp.applier.ipvs
	for _, f := range []VSKey{
		{Addr: netip.MustParseAddr("192.0.2.1"), Proto: model.TCP, Port: 443},
		{Addr: netip.MustParseAddr("192.168.1.10"), Proto: model.TCP, Port: 8080},
	} {
		mustNoErr(t, k.CreateService(kernelService(&VirtualService{VSKey: f, Scheduler: "wrr"})), "foreign service %s", f)
	}
	snapshot := func() []string {
		var out []string
		svcs, err := k.Services()
		mustNoErr(t, err, "list IPVS services")
		for _, s := range svcs {
			out = append(out, "ipvs "+keyOf(s.Service).String()+" "+s.Scheduler)
		}
		addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
		mustNoErr(t, err, "list addresses")
		for _, a := range addrs {
			out = append(out, fmt.Sprintf("addr %d %s", a.LinkIndex, a.IPNet))
		}
		out = append(out, kerneltest.LinksAndRoutes(t, h)...)
		slices.Sort(out)
		return out
	}
	before := snapshot()

	mustNoErr(t, kp.Sync(context.Background(), shapesState(webEps), &model.Changes{Full: true}), "sync")
	if programmed := snapshot(); len(programmed) < len(before)+8 {
		t.Fatalf("the sync programmed too little:\n%s", strings.Join(programmed, "\n"))
	}

	cleanup := func() []string {
		var removed []string
		mustNoErr(t, kerneltest.Do(kp.ns, func() error {
			var err error
			removed, err = Cleanup(30000, 32767)
			return err
		}), "cleanup")
		return removed
	}
	removed := cleanup()
	for _, want := range []string{"IPVS service tcp/10.96.0.10:80", "IPVS service tcp/[fd00:96::10]:80", "IPVS service tcp/192.168.1.10:30080",
		"IPVS service tcp/[fd00:1::10]:30080", "IPVS service udp/10.96.0.53:53", "interface kube-dummy-if ("} {
		if !slices.ContainsFunc(removed, func(r string) bool { return strings.HasPrefix(r, want) }) {
			t.Errorf("cleanup did not report %q: %q", want, removed)
		}
	}
	after := snapshot()
	if !slices.Equal(after, before) {
		t.Errorf("after cleanup:\n%s\nbefore:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if again := cleanup(); len(again) != 0 {
		t.Errorf("second cleanup removed %q", again)
	}
}
