package nft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// transport sends one nftables batch per commit over a raw NETLINK_NETFILTER
// socket.
//
// google/nftables asks for an acknowledgement of every message and reads them
// one by one, which costs about 0.3 ms per message on the Go side (10,000 rules:
// 3.3 s). The kernel processes a netlink batch synchronously inside sendmsg and
// reports failed messages whether or not they asked for an acknowledgement, so
// transport strips the acknowledgement flags, sends the whole batch as one
// datagram, and then sends a GETGEN request as a fence: its reply comes after
// every error of the batch, so reading up to it collects them all without
// waiting on a timer.
type transport struct {
	fd     int
	seq    uint32
	sndbuf int
	rcv    []byte
}

// openTransport opens the socket in the network namespace nsFd (0: the
// current one).
func openTransport(nsFd int) (*transport, error) {
	fd, err := socketIn(nsFd)
	if err != nil {
		return nil, fmt.Errorf("open nftables socket: %w", err)
	}
	t := &transport{fd: fd, rcv: make([]byte, 1<<20)}
	for _, o := range []struct{ level, opt, val int }{
		{unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1},
		{unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.val); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("open nftables socket: setsockopt %d: %w", o.opt, err)
		}
	}
	if err := t.setBuffers(4 << 20); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return t, nil
}

// socketIn creates the socket in nsFd (see inNetNS).
func socketIn(nsFd int) (fd int, err error) {
	err = inNetNS(nsFd, func() error {
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	return fd, err
}

// setBuffers raises both socket buffers to at least n bytes. Root may exceed
// net.core.{w,r}mem_max with the FORCE options; others get what the limits
// allow. Without this, large batches fail with EMSGSIZE on send and ENOBUFS on
// receive.
func (t *transport) setBuffers(n int) error {
	if n <= t.sndbuf {
		return nil
	}
	for _, o := range [][2]int{{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}} {
		if err := unix.SetsockoptInt(t.fd, unix.SOL_SOCKET, o[0], n); err != nil {
			if err := unix.SetsockoptInt(t.fd, unix.SOL_SOCKET, o[1], n); err != nil {
				return fmt.Errorf("nftables socket: set buffer size: %w", err)
			}
		}
	}
	t.sndbuf = n
	return nil
}

func (t *transport) close() error { return unix.Close(t.fd) }

// OpError is a message of a batch that the kernel refused.
type OpError struct {
	Op  string // what the message did, e.g. "add rule to chain np-in/default/web"
	Err error  // a syscall.Errno
	Msg string // the kernel's extended ack message, if any
}

func (e *OpError) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("%s: %v (%s)", e.Op, e.Err, e.Msg)
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// commit sends msgs as one batch and returns the number of bytes sent and the
// errors the kernel reported, joined. what[i] describes msgs[i].
func (t *transport) commit(msgs []netlink.Message, what []string) (int, error) {
	bySeq := make(map[uint32]string, 2)
	// Sized for the whole batch (a cold start's is ~5 MB): growing it by
	// doubling copied it several times and left the copies for the collector.
	size := 2 * (16 + 4) // begin and end
	for _, m := range msgs {
		size += (16 + len(m.Data) + 3) &^ 3
	}
	buf := make([]byte, 0, size)
	appendMsg := func(m netlink.Message, desc string) error {
		t.seq++
		m.Header.Sequence = t.seq
		m.Header.Length = uint32(16 + len(m.Data))
		m.Header.Flags = m.Header.Flags&^(netlink.Acknowledge|netlink.Echo) | netlink.Request
		b, err := m.MarshalBinary()
		if err != nil {
			return fmt.Errorf("marshal %s: %w", desc, err)
		}
		bySeq[t.seq] = desc
		buf = append(buf, b...)
		return nil
	}
	subsys := []byte{unix.AF_UNSPEC, 0, 0, unix.NFNL_SUBSYS_NFTABLES}
	if err := appendMsg(netlink.Message{Header: netlink.Header{Type: unix.NFNL_MSG_BATCH_BEGIN}, Data: subsys}, "begin batch"); err != nil {
		return 0, err
	}
	for i, m := range msgs {
		if err := appendMsg(m, what[i]); err != nil {
			return 0, err
		}
	}
	if err := appendMsg(netlink.Message{Header: netlink.Header{Type: unix.NFNL_MSG_BATCH_END}, Data: subsys}, "commit batch"); err != nil {
		return 0, err
	}
	if err := t.setBuffers(len(buf) + 64<<10); err != nil {
		return 0, err
	}
	if err := unix.Sendto(t.fd, buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("send batch of %d messages: %w", len(msgs), err)
	}
	// The fence.
	t.seq++
	fence := t.seq
	g := netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETGEN),
		Flags: netlink.Request, Sequence: fence}, Data: []byte{unix.AF_UNSPEC, 0, 0, 0}}
	g.Header.Length = uint32(16 + len(g.Data))
	gb, _ := g.MarshalBinary()
	if err := unix.Sendto(t.fd, gb, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return len(buf), fmt.Errorf("send fence: %w", err)
	}
	var errs []error
	for {
		n, _, err := unix.Recvfrom(t.fd, t.rcv, 0)
		if err != nil {
			return len(buf), errors.Join(append(errs, fmt.Errorf("receive batch result: %w", err))...)
		}
		replies, err := syscall.ParseNetlinkMessage(t.rcv[:n])
		if err != nil {
			return len(buf), fmt.Errorf("parse batch result: %w", err)
		}
		for _, r := range replies {
			if r.Header.Type == unix.NLMSG_ERROR && len(r.Data) >= 4 {
				if errno := int32(binary.NativeEndian.Uint32(r.Data)); errno != 0 {
					if r.Header.Seq == fence {
						return len(buf), errors.Join(append(errs, fmt.Errorf("fence: %w", syscall.Errno(-errno)))...)
					}
					errs = append(errs, &OpError{Op: bySeq[r.Header.Seq], Err: syscall.Errno(-errno), Msg: extAckMsg(r)})
				}
				continue
			}
			if r.Header.Seq == fence {
				return len(buf), errors.Join(errs...)
			}
		}
	}
}

// extAckMsg returns the NLMSGERR_ATTR_MSG of an error carrying extended-ack
// attributes (after the echoed request header, which NETLINK_CAP_ACK trims to
// its 16 bytes).
func extAckMsg(r syscall.NetlinkMessage) string {
	if r.Header.Flags&unix.NLM_F_ACK_TLVS == 0 || len(r.Data) < 20 {
		return ""
	}
	attrs, err := netlink.UnmarshalAttributes(r.Data[20:])
	if err != nil {
		return ""
	}
	for _, a := range attrs {
		if a.Type == unix.NLMSGERR_ATTR_MSG {
			return string(trimNUL(a.Data))
		}
	}
	return ""
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}
