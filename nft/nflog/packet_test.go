package nflog

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/mdlayher/netlink"
)

// message builds an NFULNL_MSG_PACKET's data as the kernel sends it.
func message(t *testing.T, prefix string, hook uint8, payload []byte) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	ae.Bytes(attrPacketHdr, []byte{0x08, 0x00, hook, 0})
	ae.Uint32(attrInDev, 7)
	ae.Bytes(attrPayload, payload)
	if prefix != "" {
		ae.Bytes(attrPrefix, append([]byte(prefix), 0))
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return append(nfgenmsg(2, 100), b...)
}

func ipv4(proto uint8, fragOffset uint16, src, dst string, l4 ...byte) []byte {
	b := make([]byte, 20)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[6:], fragOffset)
	b[9] = proto
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	return append(b, l4...)
}

func ipv6(next uint8, src, dst string, rest ...byte) []byte {
	b := make([]byte, 40)
	b[0] = 0x60
	b[6] = next
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	return append(b, rest...)
}

func TestParseMessage(t *testing.T) {
	ports := []byte{0x9c, 0x40, 0x00, 0x50} // 40000 -> 80
	for _, tc := range []struct {
		name    string
		payload []byte
		prefix  string
		want    Packet
	}{
		{"tcp over IPv4", ipv4(6, 0, "10.244.1.2", "10.244.1.1", ports...), "nfrouter deny in x",
			Packet{Prefix: "nfrouter deny in x", Hook: 2, InIf: 7, Src: netip.MustParseAddr("10.244.1.2"), Dst: netip.MustParseAddr("10.244.1.1"), Proto: 6, SPort: 40000, DPort: 80}},
		{"udp over IPv4 without prefix", ipv4(17, 0, "10.0.0.1", "10.0.0.2", 0, 53, 0, 53), "",
			Packet{Hook: 2, InIf: 7, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), Proto: 17, SPort: 53, DPort: 53}},
		{"later IPv4 fragment has no ports", ipv4(6, 100, "10.0.0.1", "10.0.0.2", ports...), "",
			Packet{Hook: 2, InIf: 7, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), Proto: 6}},
		{"icmp echo", ipv4(1, 0, "10.0.0.1", "10.0.0.2", 8, 0, 0, 0), "",
			Packet{Hook: 2, InIf: 7, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), Proto: 1, DPort: 8}},
		{"tcp over IPv6 behind hop-by-hop and a first fragment",
			ipv6(0, "fd00:1::2", "fd00:1::1", append([]byte{44, 0, 1, 4, 0, 0, 0, 0, 6, 0, 0, 1, 0, 0, 0, 1}, ports...)...), "p",
			Packet{Prefix: "p", Hook: 2, InIf: 7, Src: netip.MustParseAddr("fd00:1::2"), Dst: netip.MustParseAddr("fd00:1::1"), Proto: 6, SPort: 40000, DPort: 80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMessage(message(t, tc.prefix, 2, tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	for name, payload := range map[string][]byte{"empty": nil, "short IPv4": {0x45, 0}, "IP version 5": {0x50, 0, 0, 0}} {
		if _, err := parseMessage(message(t, "", 2, payload)); err == nil {
			t.Errorf("%s: parsed a broken packet", name)
		}
	}
}
