package nflog

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/mdlayher/netlink"
)

// Packet is one logged packet: what the log rule said about it and what
// its headers say.
type Packet struct {
	// Prefix is the log statement's prefix ("" when it has none).
	Prefix string
	// Hook is the netfilter hook that logged it (see HookName).
	Hook uint8
	// InIf and OutIf are the interface indexes it came in and would have
	// gone out on (0: none).
	InIf, OutIf uint32
	// Timestamp is when the kernel received the packet, if it said so;
	// Received when the reader did.
	Timestamp, Received time.Time

	Src, Dst netip.Addr
	// Proto is the transport protocol (the IPv6 header chain's last).
	Proto uint8
	// SPort and DPort are TCP, UDP or SCTP ports; for ICMP and ICMPv6
	// DPort is the message type. Zero in a fragment that is not the first.
	SPort, DPort uint16
}

// HookName names netfilter's hooks (enum nf_inet_hooks).
func HookName(h uint8) string {
	switch h {
	case 0:
		return "prerouting"
	case 1:
		return "input"
	case 2:
		return "forward"
	case 3:
		return "output"
	case 4:
		return "postrouting"
	}
	return fmt.Sprintf("hook-%d", h)
}

// parseMessage decodes an NFULNL_MSG_PACKET: struct nfgenmsg, then
// attributes.
func parseMessage(data []byte) (Packet, error) {
	var p Packet
	if len(data) < 4 {
		return p, fmt.Errorf("nflog: packet message of %d bytes", len(data))
	}
	ad, err := netlink.NewAttributeDecoder(data[4:])
	if err != nil {
		return p, fmt.Errorf("nflog: decode: %w", err)
	}
	ad.ByteOrder = binary.BigEndian
	var payload []byte
	for ad.Next() {
		switch ad.Type() {
		case attrPacketHdr:
			// struct nfulnl_msg_packet_hdr: hw_protocol (be16), hook, pad.
			if b := ad.Bytes(); len(b) >= 3 {
				p.Hook = b[2]
			}
		case attrTimestamp:
			// struct nfulnl_msg_packet_timestamp: sec, usec (be64 each).
			if b := ad.Bytes(); len(b) >= 16 {
				p.Timestamp = time.Unix(int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:]))*1000)
			}
		case attrInDev:
			p.InIf = ad.Uint32()
		case attrOutDev:
			p.OutIf = ad.Uint32()
		case attrPrefix:
			p.Prefix = ad.String()
		case attrPayload:
			payload = ad.Bytes()
		}
	}
	if err := ad.Err(); err != nil {
		return p, fmt.Errorf("nflog: decode: %w", err)
	}
	if err := p.parseHeaders(payload); err != nil {
		return p, err
	}
	return p, nil
}

// IP protocol numbers the reader looks into.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
	protoSCTP   = 132
)

// parseHeaders reads addresses, protocol and ports from a packet that
// starts at its network header.
func (p *Packet) parseHeaders(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("nflog: logged packet without payload")
	}
	var l4 []byte
	first := true // the first fragment, or no fragment: ports are there
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return fmt.Errorf("nflog: IPv4 header of %d bytes", len(b))
		}
		ihl := int(b[0]&0x0f) * 4
		p.Src, p.Dst = netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
		p.Proto = b[9]
		first = binary.BigEndian.Uint16(b[6:])&0x1fff == 0
		if ihl >= 20 && len(b) >= ihl {
			l4 = b[ihl:]
		}
	case 6:
		if len(b) < 40 {
			return fmt.Errorf("nflog: IPv6 header of %d bytes", len(b))
		}
		p.Src, p.Dst = netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
		p.Proto, l4, first = skipIPv6Extensions(b[6], b[40:])
	default:
		return fmt.Errorf("nflog: logged packet of IP version %d", b[0]>>4)
	}
	if !first || len(l4) < 4 {
		return nil
	}
	switch p.Proto {
	case protoTCP, protoUDP, protoSCTP:
		p.SPort, p.DPort = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case protoICMP, protoICMPv6:
		p.DPort = uint16(l4[0])
	}
	return nil
}

// skipIPv6Extensions follows the header chain from next to the transport
// header. first is false inside a fragment that is not the first.
func skipIPv6Extensions(next uint8, b []byte) (proto uint8, l4 []byte, first bool) {
	first = true
	for {
		switch next {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(b) < 8 {
				return next, nil, first
			}
			n := (int(b[1]) + 1) * 8
			if len(b) < n {
				return b[0], nil, first
			}
			next, b = b[0], b[n:]
		case 44: // fragment
			if len(b) < 8 {
				return next, nil, first
			}
			first = binary.BigEndian.Uint16(b[2:])&0xfff8 == 0
			next, b = b[0], b[8:]
		default:
			return next, b, first
		}
	}
}
