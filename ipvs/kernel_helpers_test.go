package ipvs

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/nft"
)

// kernelProxy is a Proxy on real netlink in a network namespace of its own.
type kernelProxy struct {
	*Proxy
	ns    netns.NsHandle
	clock *clocktesting.FakeClock
}

// newKernelProxy makes a namespace and a proxy in it; a kernel without IPVS
// skips on the host and fails in a VM guest.
func newKernelProxy(t testing.TB, grace time.Duration) *kernelProxy {
	t.Helper()
	kerneltest.RequireRoot(t)
	ns := kerneltest.NewNetNS(t)
	kp := &kernelProxy{ns: ns, clock: clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))}
	err := kerneltest.Do(ns, func() error {
		if err := Available(); err != nil {
			return err
		}
		var err error
		kp.Proxy, err = New(Config{PlanConfig: PlanConfig{NodeName: thisNode}, GracePeriod: grace, Clock: kp.clock,
			Logger: slog.New(slog.DiscardHandler)})
		return err
	})
	if err != nil {
		kerneltest.MissingFeature(t, "IPVS", err)
	}
	t.Cleanup(func() { kp.Close() })
	return kp
}

// check compares what the kernel holds with what the planner wants.
func (kp *kernelProxy) check(t testing.TB, draining map[VSKey][]Dest) {
	t.Helper()
	if got, want := dumpKernel(t, kp.applier.ipvs, kp.applier.addrs), dumpWant(kp.planner, draining); got != want {
		t.Errorf("kernel holds\n%s\nwant\n%s", got, want)
	}
}

// backendNS makes a namespace for a backend pod at addr/24 on a veth to
// nodeNS, where the node side gets gw/24; the backend routes everything
// through the node.
func backendNS(t testing.TB, nodeNS netns.NsHandle, nodeIf, gw, addr string) netns.NsHandle {
	t.Helper()
	ns := kerneltest.NewNetNS(t)
	node, pod := kerneltest.Handle(t, nodeNS), kerneltest.Handle(t, ns)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: nodeIf}, PeerName: "eth0", PeerNamespace: netlink.NsFd(ns)}
	if err := node.LinkAdd(veth); err != nil {
		t.Fatalf("add veth: %v", err)
	}
	kerneltest.LinkUp(t, node, nodeIf, gw+"/24")
	eth0 := kerneltest.LinkUp(t, pod, "eth0", addr+"/24")
	if err := pod.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: net.ParseIP(gw)}); err != nil {
		t.Fatalf("default route of %s: %v", addr, err)
	}
	return ns
}

func mustNoErr(t testing.TB, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// enableForwarding lets the node namespace ns route between its backends
// and client pods.
func enableForwarding(t testing.TB, ns netns.NsHandle) {
	t.Helper()
	mustNoErr(t, kerneltest.Do(ns, func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	}), "enable forwarding")
}

// newNAT programs the NAT part with cfg (on this node) next to kp's IPVS
// and closes it when the test ends; the caller syncs it.
func newNAT(t testing.TB, kp *kernelProxy, cfg NATConfig) *nft.Backend {
	t.Helper()
	cfg.NodeName = thisNode
	b, err := nft.New(nft.Config{NetNSFd: int(kp.ns)})
	mustNoErr(t, err, "nftables backend")
	t.Cleanup(func() { b.Close() })
	b.Add(NewNAT(b.Table(), cfg))
	return b
}

// readFrom connects from ns to the TCP address dst and returns all the
// server wrote, giving up after timeout.
func readFrom(from netns.NsHandle, dst string, timeout time.Duration) (string, error) {
	var got string
	err := kerneltest.Do(from, func() error {
		c, err := net.DialTimeout("tcp4", dst, timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(timeout))
		b, err := io.ReadAll(c)
		got = string(b)
		return err
	})
	return got, err
}
