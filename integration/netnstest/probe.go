package netnstest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// ProbeTimeout bounds how long a probe that should be blocked waits for an
// answer before it counts as blocked. Allowed probes between namespaces
// answer in well under a millisecond on the host, so this is a wide margin,
// not a synchronisation; a VM guest under software emulation gets more.
var ProbeTimeout = func() time.Duration {
	if kerneltest.InGuest() {
		return 3 * time.Second
	}
	return time.Second
}()

// AllowedTimeout bounds how long a probe that should pass waits. It costs
// nothing when the probe passes, so it is long enough for a VM guest under
// software emulation with many probes in flight.
var AllowedTimeout = 30 * time.Second

// Serve makes the pod answer on port for "tcp" and "udp" (dual-stack
// sockets) until the test ends: TCP connections get the pod's name, then an
// echo of whatever they send until they close; UDP datagrams get the pod's
// name.
func (p *Pod) Serve(t testing.TB, protocol string, port int) {
	t.Helper()
	addr := ":" + strconv.Itoa(port)
	err := kerneltest.Do(p.NS, func() error {
		switch protocol {
		case "tcp":
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						if _, err := c.Write([]byte(p.Name)); err == nil {
							io.Copy(c, c)
						}
					}()
				}
			}()
		case "udp":
			c, err := net.ListenPacket("udp", addr)
			if err != nil {
				return err
			}
			t.Cleanup(func() { c.Close() })
			go func() {
				buf := make([]byte, 64)
				for {
					_, from, err := c.ReadFrom(buf)
					if err != nil {
						return
					}
					c.WriteTo([]byte(p.Name), from)
				}
			}()
		default:
			return fmt.Errorf("unknown protocol %q", protocol)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("pod %s: serve %s/%d: %v", p.Name, protocol, port, err)
	}
}

// Probe reports whether the pod can reach dst on protocol/port and get the
// server's answer within ProbeTimeout. Errors other than a timeout or a
// refusal fail the test.
func (p *Pod) Probe(t testing.TB, protocol string, dst netip.Addr, port int) bool {
	return p.ProbeWithin(t, protocol, dst, port, ProbeTimeout)
}

// ProbeWithin is Probe with its own timeout.
func (p *Pod) ProbeWithin(t testing.TB, protocol string, dst netip.Addr, port int, timeout time.Duration) bool {
	var ok bool
	err := kerneltest.Do(p.NS, func() error {
		if protocol == "sctp" {
			var err error
			ok, err = probeSCTP(dst, port, timeout)
			return err
		}
		target := netip.AddrPortFrom(dst, uint16(port)).String()
		deadline := time.Now().Add(timeout)
		d := net.Dialer{Timeout: timeout}
		if protocol == "udp" {
			// A fresh source port per probe: conntrack remembers UDP flows for
			// 30 s, and a probe reusing the ports of one an earlier policy
			// allowed would pass as established.
			d.LocalAddr = &net.UDPAddr{Port: nextUDPPort()}
		}
		c, err := d.Dial(protocol, target)
		if err != nil {
			if isBlocked(err) {
				return nil
			}
			return err
		}
		defer c.Close()
		c.SetDeadline(deadline)
		buf := make([]byte, 64)
		var n int
		if protocol == "udp" {
			n, err = udpExchange(c, deadline)
		} else {
			n, err = c.Read(buf)
		}
		if err != nil {
			if isBlocked(err) {
				return nil
			}
			return err
		}
		ok = n > 0
		return nil
	})
	if err != nil {
		// Errorf, not Fatalf: probes run on goroutines of their own.
		t.Errorf("probe %s -> %s %s/%d: %v", p.Name, dst, protocol, port, err)
	}
	return ok
}

// udpResend is how often a UDP probe repeats its datagram: unlike a TCP SYN
// it is not retransmitted, and the first one may be dropped while the
// neighbour entry resolves (the kernel queues only a few packets per
// unresolved neighbour, and probes run many at a time).
const udpResend = 250 * time.Millisecond

// udpExchange sends a datagram on c until an answer arrives or the deadline
// passes, and returns the answer's length.
func udpExchange(c net.Conn, deadline time.Time) (int, error) {
	buf := make([]byte, 64)
	for {
		if _, err := c.Write([]byte("?")); err != nil {
			return 0, err
		}
		next := time.Now().Add(udpResend)
		if next.After(deadline) {
			next = deadline
		}
		c.SetReadDeadline(next)
		n, err := c.Read(buf)
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() && time.Now().Before(deadline) {
			continue
		}
		return n, err
	}
}

// udpPort hands out UDP source ports below the kernel's ephemeral range
// (32768 and up by default), one per probe.
var udpPort atomic.Uint32

func nextUDPPort() int { return 10000 + int(udpPort.Add(1)%22000) }

func isBlocked(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// A UDP probe whose request was dropped may see a stale ICMP error; a TCP
	// probe to a port nobody serves is refused. Neither is a pass.
	var oe *net.OpError
	return errors.As(err, &oe)
}

// ProbeCase is one expected connection.
type ProbeCase struct {
	From     *Pod
	To       netip.Addr
	ToName   string
	Protocol string
	Port     int
	Want     bool
}

// RunProbes runs the probes in parallel and reports every mismatch.
func RunProbes(t testing.TB, cases []ProbeCase) {
	t.Helper()
	got := make([]bool, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if !c.Want {
				got[i] = c.From.ProbeWithin(t, c.Protocol, c.To, c.Port, ProbeTimeout)
				return
			}
			// An allowed probe may fail early for reasons that pass (an
			// unresolved neighbour under a slow emulated CPU): try again
			// until it answers or AllowedTimeout has passed.
			deadline := time.Now().Add(AllowedTimeout)
			for !got[i] && time.Now().Before(deadline) {
				got[i] = c.From.ProbeWithin(t, c.Protocol, c.To, c.Port, time.Until(deadline))
			}
		}()
	}
	wg.Wait()
	for i, c := range cases {
		if got[i] != c.Want {
			t.Errorf("%s -> %s (%s) %s/%d: connected=%v, want %v", c.From.Name, c.ToName, c.To, c.Protocol, c.Port, got[i], c.Want)
		}
	}
}
