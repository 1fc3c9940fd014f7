package vmsmoke

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cloudflare/ipvs"
	"github.com/cloudflare/ipvs/netmask"
	"github.com/vishvananda/netlink"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// TestTCPThroughIPVS connects from a client namespace to a virtual service
// whose address sits on a dummy interface there, as nfrouter's IPVS proxy
// sets it up on a node, and reaches a server in a second namespace through
// IPVS NAT:
//
//	client ns: vip0 10.96.0.10/32, IPVS 10.96.0.10:80 -> 10.0.0.2:8080
//	           c0 10.0.0.1/24  <-veth->  s0 10.0.0.2/24, server on :8080
func TestTCPThroughIPVS(t *testing.T) {
	kerneltest.RequireRoot(t)
	clientNS, serverNS := kerneltest.NewNetNS(t), kerneltest.NewNetNS(t)
	ipvsClient := ipvsAt(t, clientNS)
	client, server := kerneltest.Handle(t, clientNS), kerneltest.Handle(t, serverNS)

	addLink(t, client, &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "vip0"}})
	addLink(t, client, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "c0"}, PeerName: "s0", PeerNamespace: netlink.NsFd(serverNS)})
	kerneltest.LinkUp(t, client, "vip0", "10.96.0.10/32")
	kerneltest.LinkUp(t, client, "c0", "10.0.0.1/24")
	s0 := kerneltest.LinkUp(t, server, "s0", "10.0.0.2/24")
	// Replies go to the VIP, the client's source address.
	if err := server.RouteAdd(&netlink.Route{LinkIndex: s0.Attrs().Index, Gw: net.ParseIP("10.0.0.1")}); err != nil {
		t.Fatalf("server default route: %v", err)
	}

	svc := ipvs.Service{
		Address: netip.MustParseAddr("10.96.0.10"), Netmask: netmask.MaskFrom(32, 32),
		Port: 80, Family: ipvs.INET, Protocol: ipvs.TCP, Scheduler: "rr",
	}
	dest := ipvs.Destination{Address: netip.MustParseAddr("10.0.0.2"), Port: 8080, Family: ipvs.INET, FwdMethod: ipvs.Masquerade, Weight: 1}
	if err := ipvsClient.CreateService(svc); err != nil {
		t.Fatalf("create service: %v", err)
	}
	if err := ipvsClient.CreateDestination(svc, dest); err != nil {
		t.Fatalf("create destination: %v", err)
	}

	const greeting = "hello from the server namespace"
	var ln net.Listener
	if err := kerneltest.Do(serverNS, func() (err error) {
		ln, err = net.Listen("tcp4", "10.0.0.2:8080")
		return err
	}); err != nil {
		t.Fatalf("listen in server namespace: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, greeting)
	}()

	var conn net.Conn
	if err := kerneltest.Do(clientNS, func() (err error) {
		conn, err = net.DialTimeout("tcp4", "10.96.0.10:80", 10*time.Second)
		return err
	}); err != nil {
		t.Fatalf("connect to the virtual service: %v", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("read from the virtual service: %v", err)
	}
	if string(got) != greeting {
		t.Errorf("read %q through the virtual service, want %q", got, greeting)
	}

	dests, err := ipvsClient.Destinations(svc)
	if err != nil || len(dests) != 1 {
		t.Fatalf("destinations read back as %v (%v), want one", dests, err)
	}
	if n := dests[0].ActiveConnections + dests[0].InactiveConnections; n < 1 {
		t.Errorf("IPVS counts %d connections to %s, want the one just made", n, dest.Address)
	}
}
