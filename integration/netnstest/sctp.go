package netnstest

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Go's net package has no SCTP, so SCTP servers and probes use raw socket
// calls: one-to-one style (SOCK_STREAM) sockets, which connect, accept, read
// and write like TCP.

// SCTPSupported reports why the kernel of ns cannot open SCTP sockets (the
// sctp module is missing), or nil.
func SCTPSupported(ns *Pod) error {
	return kerneltest.Do(ns.NS, func() error {
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
		if err != nil {
			return fmt.Errorf("sctp socket: %w", err)
		}
		return unix.Close(fd)
	})
}

// ServeSCTP makes the pod answer SCTP associations on port (dual-stack) with
// its name until the test ends.
func (p *Pod) ServeSCTP(t testing.TB, port int) {
	t.Helper()
	var fd int
	err := kerneltest.Do(p.NS, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
		if err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrInet6{Port: port}); err != nil {
			return err
		}
		return unix.Listen(fd, 64)
	})
	if err != nil {
		t.Fatalf("pod %s: serve sctp/%d: %v", p.Name, port, err)
	}
	// Shutdown wakes the blocked Accept with an error; then the loop ends.
	t.Cleanup(func() { unix.Shutdown(fd, unix.SHUT_RDWR); unix.Close(fd) })
	go func() {
		for {
			nfd, _, err := unix.Accept(fd)
			if err != nil {
				return
			}
			unix.Write(nfd, []byte(p.Name))
			unix.Close(nfd)
		}
	}()
}

// probeSCTP reports whether an SCTP association to dst:port gets the
// server's answer within timeout.
func probeSCTP(dst netip.Addr, port int, timeout time.Duration) (bool, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	for _, opt := range []int{unix.SO_SNDTIMEO, unix.SO_RCVTIMEO} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv); err != nil {
			return false, err
		}
	}
	sa := &unix.SockaddrInet6{Port: port, Addr: netip.AddrFrom16(dst.As16()).As16()}
	if err := unix.Connect(fd, sa); err != nil {
		if blockedErrno(err) {
			return false, nil
		}
		return false, fmt.Errorf("connect: %w", err)
	}
	buf := make([]byte, 64)
	n, err := unix.Read(fd, buf)
	if err != nil {
		if blockedErrno(err) {
			return false, nil
		}
		return false, fmt.Errorf("read: %w", err)
	}
	return n > 0, nil
}

// blockedErrno says whether a socket call failed the way a dropped or
// refused association does.
func blockedErrno(err error) bool {
	for _, e := range []error{unix.EAGAIN, unix.ETIMEDOUT, unix.EINPROGRESS, unix.ECONNREFUSED, unix.ECONNRESET, unix.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
