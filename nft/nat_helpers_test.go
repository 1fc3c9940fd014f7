package nft

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/netnstest"
	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Helpers of the NAT kernel tests (pod egress, IPVS NAT): links between
// namespaces, and what a connection's source looks like to the server
// (serveIdentity's answer).

// wire joins namespaces a and b with a veth pair named aIf/bIf and gives
// each end its addresses (CIDR notation, IPv6 without duplicate address
// detection so that they are usable at once).
func wire(t testing.TB, a, b netns.NsHandle, aIf, bIf string, aAddrs, bAddrs []string) {
	t.Helper()
	ha, hb := kerneltest.Handle(t, a), kerneltest.Handle(t, b)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: aIf}, PeerName: bIf, PeerNamespace: netlink.NsFd(int(b))}
	if err := ha.LinkAdd(veth); err != nil {
		t.Fatalf("add veth %s/%s: %v", aIf, bIf, err)
	}
	for _, end := range []struct {
		h     *netlink.Handle
		name  string
		addrs []string
	}{{ha, aIf, aAddrs}, {hb, bIf, bAddrs}} {
		link, err := end.h.LinkByName(end.name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range end.addrs {
			p := netip.MustParsePrefix(s)
			a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}, Flags: unix.IFA_F_NODAD}
			if err := end.h.AddrAdd(link, a); err != nil {
				t.Fatalf("add %s to %s: %v", s, end.name, err)
			}
		}
		if err := end.h.LinkSetUp(link); err != nil {
			t.Fatal(err)
		}
	}
}

// routeVia adds routes to dsts through gateway gw in ns.
func routeVia(t testing.TB, ns netns.NsHandle, gw string, dsts ...string) {
	t.Helper()
	h := kerneltest.Handle(t, ns)
	for _, d := range dsts {
		p := netip.MustParsePrefix(d)
		r := &netlink.Route{Dst: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
			Gw: net.IP(netip.MustParseAddr(gw).AsSlice())}
		if err := h.RouteAdd(r); err != nil {
			t.Fatalf("route %s via %s: %v", d, gw, err)
		}
	}
}

// wantSource fails the test unless a connection from ns to dst:port
// arrives with source want.
func wantSource(t testing.TB, what string, ns netns.NsHandle, dst netip.Addr, port int, want netip.Addr) {
	t.Helper()
	_, got, err := ask(ns, "tcp", netip.AddrPortFrom(dst, uint16(port)), netnstest.AllowedTimeout)
	if err != nil {
		t.Errorf("%s: connect to %s port %d: %v", what, dst, port, err)
		return
	}
	if got != want {
		t.Errorf("%s: %s saw source %s, want %s", what, dst, got, want)
	}
}

// requireRoundTrip checks what a backend programmed for st: a full resync
// finds nothing to repair, nft lists our table exactly as the parts render
// it, and the listing parses again.
func requireRoundTrip(t *testing.T, ns netns.NsHandle, b *Backend, st *model.State, mk func(*ruleset.Table) []Part) {
	t.Helper()
	if s := syncOK(t, b, st, &model.Changes{Full: true}); s.Messages != 0 {
		t.Errorf("full resync sent %d messages (%v), want 0: the read-back differs from what was written", s.Messages, s.ByType)
	}
	var want bytes.Buffer
	if err := Render(t.Context(), &want, st, func(tbl *ruleset.Table) ([]Part, error) { return mk(tbl), nil }); err != nil {
		t.Fatal(err)
	}
	// Our table only: a test may add tables of its own.
	listed := nftIn(t, ns, "", "list", "table", TableFamily, TableName)
	if normalizeTable(listed) != normalizeTable(want.String()) {
		t.Errorf("kernel listing differs from the rendering:\n--- nft list table\n%s\n--- rendered\n%s", listed, want.String())
	}
	nftIn(t, kerneltest.NewNetNS(t), listed, "-c", "-f", "-")
}

// normalizeTable is normalize without the table's own first line, which
// would otherwise stick to whichever object the kernel lists first (it lists
// them in the order they were made, not by name).
func normalizeTable(text string) string {
	header, rest, _ := strings.Cut(strings.TrimLeft(text, "\n"), "\n")
	return header + "\n" + normalize(rest)
}

func prefixesOf(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// byFamily picks the IPv4 or the IPv6 address of a pair.
type byFamily [2]netip.Addr

func pair(v4, v6 string) byFamily { return byFamily{netip.MustParseAddr(v4), netip.MustParseAddr(v6)} }

func (b byFamily) of(v6 bool) netip.Addr {
	if v6 {
		return b[1]
	}
	return b[0]
}

// addToLoopback adds addr (CIDR notation) to lo in ns.
func addToLoopback(t testing.TB, ns netns.NsHandle, addr string) {
	t.Helper()
	h := kerneltest.Handle(t, ns)
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	a, err := netlink.ParseAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddrAdd(lo, a); err != nil {
		t.Fatalf("add %s to lo: %v", addr, err)
	}
}

// pingOK sends ICMP echo requests from ns to the IPv4 address dst, once
// every 100 ms, and reports whether a matching reply came within timeout.
func pingOK(t testing.TB, ns netns.NsHandle, dst netip.Addr, timeout time.Duration) bool {
	t.Helper()
	var ok bool
	err := kerneltest.Do(ns, func() error {
		c, err := net.ListenPacket("ip4:icmp", "0.0.0.0")
		if err != nil {
			return err
		}
		defer c.Close()
		const id = 0x4e46
		req := []byte{8, 0, 0, 0, id >> 8, id & 0xff, 0, 1}
		sum := ^icmpChecksum(req)
		req[2], req[3] = byte(sum>>8), byte(sum)
		deadline := time.Now().Add(timeout)
		buf := make([]byte, 1500)
		for time.Now().Before(deadline) {
			if _, err := c.WriteTo(req, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
				return err
			}
			next := time.Now().Add(100 * time.Millisecond)
			if next.After(deadline) {
				next = deadline
			}
			c.SetReadDeadline(next)
			for {
				n, from, err := c.ReadFrom(buf)
				if err != nil {
					break // read deadline: send again
				}
				// An echo reply (type 0) to our id, from dst.
				if n >= 8 && buf[0] == 0 && buf[4] == id>>8 && buf[5] == id&0xff && from.String() == dst.String() {
					ok = true
					return nil
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ping %s: %v", dst, err)
	}
	return ok
}

// icmpChecksum is the ones' complement sum of b in 16-bit words.
func icmpChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}
