package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nftables netlink constants (linux/netfilter/nfnetlink.h, nf_tables.h).
const (
	nfnlgrpNFTables    = 7  // NFNLGRP_NFTABLES
	nfnlSubsysNFTables = 10 // NFNL_SUBSYS_NFTABLES
	nftMsgNewGen       = 15 // NFT_MSG_NEWGEN
)

// GenWatcher follows the nftables generations a node namespace's kernel
// commits, from the nftables multicast group: every committed transaction is
// announced object by object and closed by a NEWGEN message. It answers when
// the first generation carrying an address was committed, whoever wrote it.
type GenWatcher struct {
	conn *netlink.Conn

	// mu protects the fields below.
	mu      sync.Mutex
	want    []byte // the address looked for
	seen    bool   // the open transaction carried want
	hit     chan time.Time
	lost    int // ENOBUFS: announcements dropped by the kernel
	commits int
}

// WatchGenerations subscribes to the nftables group in ns.
func WatchGenerations(ns netns.NsHandle) (*GenWatcher, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: int(ns)})
	if err != nil {
		return nil, fmt.Errorf("nftables monitor: %w", err)
	}
	if err := c.JoinGroup(nfnlgrpNFTables); err != nil {
		c.Close()
		return nil, fmt.Errorf("nftables monitor: join group: %w", err)
	}
	// A sync of a big table announces hundreds of thousands of objects.
	_ = c.SetReadBuffer(64 << 20)
	w := &GenWatcher{conn: c}
	go w.read()
	return w, nil
}

// Close stops watching.
func (w *GenWatcher) Close() error { return w.conn.Close() }

func (w *GenWatcher) read() {
	for {
		msgs, err := w.conn.Receive()
		at := time.Now()
		if err != nil {
			if errors.Is(err, unix.ENOBUFS) {
				w.mu.Lock()
				w.lost++
				w.mu.Unlock()
				continue
			}
			return // closed
		}
		w.mu.Lock()
		for _, m := range msgs {
			if uint16(m.Header.Type)>>8 != nfnlSubsysNFTables {
				continue
			}
			if uint16(m.Header.Type)&0xff == nftMsgNewGen {
				w.commits++
				if w.seen && w.hit != nil {
					w.hit <- at
					w.hit, w.want = nil, nil
				}
				w.seen = false
				continue
			}
			if w.want != nil && bytes.Contains(m.Data, w.want) {
				w.seen = true
			}
		}
		w.mu.Unlock()
	}
}

// Expect starts looking for addr: the returned function waits for the
// commit of the first generation from now on whose objects hold addr's bytes
// and returns when it was announced. Call Expect before making the change.
func (w *GenWatcher) Expect(addr netip.Addr) func(ctx context.Context, timeout time.Duration) (time.Time, error) {
	hit := make(chan time.Time, 1)
	w.mu.Lock()
	w.want, w.seen, w.hit = addr.AsSlice(), false, hit
	w.mu.Unlock()
	return func(ctx context.Context, timeout time.Duration) (time.Time, error) {
		select {
		case at := <-hit:
			return at, nil
		case <-time.After(timeout):
		case <-ctx.Done():
		}
		w.mu.Lock()
		w.want, w.hit = nil, nil
		lost := w.lost
		w.mu.Unlock()
		return time.Time{}, fmt.Errorf("no nftables generation carrying %s within %s (%d announcement batches lost)", addr, timeout, lost)
	}
}

// Commits is the number of generations committed since the watch began.
func (w *GenWatcher) Commits() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.commits
}
