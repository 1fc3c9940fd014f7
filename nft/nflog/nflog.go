// Package nflog reads the packets netfilter logs to an NFLOG group
// (nfnetlink_log) over netlink: what the firewall's deny chain logs before
// it drops a packet. It is what `nfrouter denials` reads; it starts no
// process and needs no ulogd.
//
// # Kernel quirks
//
//   - One socket per group and network namespace: binding a group another
//     listener (ulogd, a second `nfrouter denials`) holds fails with EPERM,
//     as it does without CAP_NET_ADMIN.
//   - The kernel queues logged packets per group and sends them when 100
//     are queued or a second has passed; the reader asks for each packet
//     at once (queue threshold 1), which a rule's own threshold overrides.
//   - A listener too slow for the log rate loses packets: the socket
//     reports ENOBUFS once, and reading goes on (ErrOverrun).
package nflog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// nfnetlink_log's messages and attributes
// (include/uapi/linux/netfilter/nfnetlink_log.h); x/sys/unix has only the
// subsystem number.
const (
	msgPacket = 0
	msgConfig = 1

	cfgCmd     = 1
	cfgMode    = 2
	cfgQThresh = 5

	cmdBind    = 1
	copyPacket = 2

	attrPacketHdr = 1
	attrTimestamp = 3
	attrInDev     = 4
	attrOutDev    = 5
	attrPayload   = 9
	attrPrefix    = 10
)

// copyRange is how much of each packet the kernel sends: the network and
// transport headers, with room for IPv6 extension headers.
const copyRange = 256

// ErrOverrun says the socket's buffer overflowed and logged packets were
// lost; reading can go on.
var ErrOverrun = errors.New("nflog: receive buffer overrun, logged packets were lost")

// Reader receives the packets logged to one NFLOG group. It is not safe for
// concurrent use.
type Reader struct {
	c      *netlink.Conn
	group  uint16
	queued []netlink.Message
}

// Listen binds NFLOG group in the network namespace netnsFd (0: the
// current one). It needs CAP_NET_ADMIN there.
func Listen(group uint16, netnsFd int) (*Reader, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: netnsFd})
	if err != nil {
		return nil, fmt.Errorf("nflog: dial netfilter netlink: %w", err)
	}
	r := &Reader{c: c, group: group}
	if err := r.bind(); err != nil {
		c.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) bind() error {
	err := r.configure(func(ae *netlink.AttributeEncoder) { ae.Bytes(cfgCmd, []byte{cmdBind}) })
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("nflog: bind group %d: another listener holds it, or CAP_NET_ADMIN is missing: %w", r.group, err)
	}
	if err != nil {
		return fmt.Errorf("nflog: bind group %d: %w", r.group, err)
	}
	err = r.configure(func(ae *netlink.AttributeEncoder) {
		// struct nfulnl_msg_config_mode: copy_range (be32), copy_mode, pad.
		mode := make([]byte, 6)
		binary.BigEndian.PutUint32(mode, copyRange)
		mode[4] = copyPacket
		ae.Bytes(cfgMode, mode)
		ae.Uint32(cfgQThresh, 1)
	})
	if err != nil {
		return fmt.Errorf("nflog: configure group %d: %w", r.group, err)
	}
	return nil
}

// configure sends one config message for the group and waits for its
// acknowledgement.
func (r *Reader) configure(attrs func(*netlink.AttributeEncoder)) error {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian // nfnetlink_log's numbers are big endian
	attrs(ae)
	b, err := ae.Encode()
	if err != nil {
		return err
	}
	_, err = r.c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_ULOG<<8 | msgConfig),
			Flags: netlink.Request | netlink.Acknowledge},
		Data: append(nfgenmsg(unix.AF_UNSPEC, r.group), b...)})
	return err
}

// nfgenmsg is struct nfgenmsg: family, version 0, res_id (big endian).
func nfgenmsg(family uint8, resID uint16) []byte {
	hdr := []byte{family, unix.NFNETLINK_V0, 0, 0}
	binary.BigEndian.PutUint16(hdr[2:], resID)
	return hdr
}

// Read returns the next logged packet, waiting until one comes or ctx is
// done. After ErrOverrun, reading can go on.
func (r *Reader) Read(ctx context.Context) (Packet, error) {
	for {
		for len(r.queued) > 0 {
			m := r.queued[0]
			r.queued = r.queued[1:]
			if m.Header.Type != netlink.HeaderType(unix.NFNL_SUBSYS_ULOG<<8|msgPacket) {
				continue
			}
			p, err := parseMessage(m.Data)
			if err != nil {
				return Packet{}, err
			}
			p.Received = time.Now()
			return p, nil
		}
		if err := r.receive(ctx); err != nil {
			return Packet{}, err
		}
	}
}

func (r *Reader) receive(ctx context.Context) error {
	// A read deadline in the past wakes the blocked read when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = r.c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	msgs, err := r.c.Receive()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, unix.ENOBUFS):
		return ErrOverrun
	case err != nil:
		return fmt.Errorf("nflog: receive: %w", err)
	}
	r.queued = append(r.queued, msgs...)
	return nil
}

// Close releases the socket, and with it the group.
func (r *Reader) Close() error { return r.c.Close() }
