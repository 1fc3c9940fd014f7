// Package nftconn opens nftables netlink connections in a network namespace,
// the one preamble every reader and cleaner of nfrouter's tables shares.
package nftconn

import (
	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
)

// Open returns an nftables connection to the network namespace nsFd (0: the
// caller's), with opts added.
func Open(nsFd int, opts ...nftables.ConnOption) (*nftables.Conn, error) {
	if nsFd != 0 {
		opts = append(opts, nftables.WithNetNSFd(nsFd))
	}
	return nftables.New(opts...)
}

// Buffers sets the socket's receive and send buffer sizes in bytes: a large
// table or map is read, or deleted, in one batch.
func Buffers(read, write int) nftables.ConnOption {
	return nftables.WithSockOptions(func(c *netlink.Conn) error {
		if err := c.SetReadBuffer(read); err != nil {
			return err
		}
		return c.SetWriteBuffer(write)
	})
}
