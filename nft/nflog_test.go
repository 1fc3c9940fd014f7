package nft

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/netpol"
)

// nfnetlink_log (include/uapi/linux/netfilter/nfnetlink_log.h); x/sys/unix
// has only the subsystem number.
const (
	nfulnlMsgPacket = 0
	nfulnlMsgConfig = 1

	nfulaCfgCmd  = 1
	nfulaCfgMode = 2
	nfulaPayload = 9
	nfulaPrefix  = 10

	nfulnlCfgCmdBind  = 1
	nfulnlCopyPacket  = 2
	nfulnlCopyRangeV4 = 0xffff
)

// nflogReader is a minimal NFLOG listener: bound to one group in one network
// namespace, it returns the network-layer payload of each logged packet.
type nflogReader struct {
	c *netlink.Conn
}

func listenNFLog(t *testing.T, ns netns.NsHandle, group uint16) *nflogReader {
	t.Helper()
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: int(ns)})
	if err != nil {
		t.Fatalf("nflog: dial netfilter netlink: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	config := func(attrs func(*netlink.AttributeEncoder)) {
		ae := netlink.NewAttributeEncoder()
		attrs(ae)
		b, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		// struct nfgenmsg: family AF_UNSPEC, version 0, res_id = group (big endian).
		hdr := []byte{unix.AF_UNSPEC, 0, 0, 0}
		binary.BigEndian.PutUint16(hdr[2:], group)
		_, err = c.Execute(netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_ULOG<<8 | nfulnlMsgConfig),
				Flags: netlink.Request | netlink.Acknowledge},
			Data: append(hdr, b...)})
		if err != nil {
			t.Fatalf("nflog: configure group %d: %v", group, err)
		}
	}
	config(func(ae *netlink.AttributeEncoder) { ae.Bytes(nfulaCfgCmd, []byte{nfulnlCfgCmdBind}) })
	config(func(ae *netlink.AttributeEncoder) {
		// struct nfulnl_msg_config_mode: copy_range (be32), copy_mode, pad.
		mode := make([]byte, 6)
		binary.BigEndian.PutUint32(mode, nfulnlCopyRangeV4)
		mode[4] = nfulnlCopyPacket
		ae.Bytes(nfulaCfgMode, mode)
	})
	return &nflogReader{c: c}
}

// next returns the prefix and payload of the next logged packet, failing the
// test when none arrives before deadline.
func (r *nflogReader) next(t *testing.T, deadline time.Time) (prefix string, payload []byte) {
	t.Helper()
	if err := r.c.SetReadDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	for {
		msgs, err := r.c.Receive()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("nflog: no packet logged before the deadline")
		}
		if err != nil {
			t.Fatalf("nflog: receive: %v", err)
		}
		for _, m := range msgs {
			if m.Header.Type != netlink.HeaderType(unix.NFNL_SUBSYS_ULOG<<8|nfulnlMsgPacket) || len(m.Data) < 4 {
				continue
			}
			ad, err := netlink.NewAttributeDecoder(m.Data[4:])
			if err != nil {
				t.Fatalf("nflog: decode: %v", err)
			}
			for ad.Next() {
				switch ad.Type() {
				case nfulaPrefix:
					prefix = strings.TrimSuffix(ad.String(), "\x00")
				case nfulaPayload:
					payload = ad.Bytes()
				}
			}
			if err := ad.Err(); err != nil {
				t.Fatalf("nflog: decode: %v", err)
			}
			if payload != nil {
				return prefix, payload
			}
		}
	}
}

// TestKernelDeniedPacketIsLogged checks that a packet a policy drops reaches
// the deny chain's nflog group with its addresses and port and a prefix
// naming the direction and namespace, and is counted for that namespace.
func TestKernelDeniedPacketIsLogged(t *testing.T) {
	c := newCluster(t, false)
	syncOK(t, c.f, c.st.State, &model.Changes{Full: true})
	c.setPolicies(t, `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-ingress, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  policyTypes: [Ingress]
`)
	log := listenNFLog(t, c.node.NS, netpol.NFLogGroup)
	from, to := c.pods["y/b"], c.pods["x/a"]
	if from.Probe(t, "tcp", to.IPs[0], 80) {
		t.Fatal("probe y/b -> x/a tcp/80 passed a deny-all ingress policy")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		prefix, pkt := log.next(t, deadline)
		if len(pkt) < 20 || pkt[0]>>4 != 4 {
			continue
		}
		ihl := int(pkt[0]&0x0f) * 4
		src, dst := netip.AddrFrom4([4]byte(pkt[12:16])), netip.AddrFrom4([4]byte(pkt[16:20]))
		if len(pkt) < ihl+4 || pkt[9] != unix.IPPROTO_TCP {
			continue
		}
		port := binary.BigEndian.Uint16(pkt[ihl+2:])
		if src != from.IPs[0] || dst != to.IPs[0] || port != 80 {
			t.Logf("nflog: skipping logged packet %v -> %v proto %d port %d", src, dst, pkt[9], port)
			continue
		}
		if want := "nfrouter deny ingress x: "; prefix != want {
			t.Errorf("nflog prefix %q, want %q", prefix, want)
		}
		break
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c.f.parts[0].(*Firewall).denied)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	denied := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			denied[strings.Join(labels, ",")] = m.GetCounter().GetValue()
		}
	}
	if denied["direction=ingress,namespace=x"] < 1 {
		t.Errorf("nfrouter_firewall_denied_packets_total: %v, want x/ingress counted", denied)
	}
	if denied["direction=,namespace="] != 0 || len(denied) != 2 {
		t.Errorf("nfrouter_firewall_denied_packets_total: %v, want only x/ingress and the empty node-wide chain", denied)
	}
}
