package netnstest

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// ProbeTimeout bounds how long a probe waits for an answer; a probe that times
// out counts as blocked. Allowed probes between namespaces answer in well
// under a millisecond, so this is a wide margin, not a synchronisation.
var ProbeTimeout = time.Second

// Serve makes the pod answer on port for "tcp" and "udp" (dual-stack
// sockets) until the test ends: TCP connections get the pod's name, UDP
// datagrams an echo of the pod's name.
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
					c.Write([]byte(p.Name))
					c.Close()
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
// server's answer. Errors other than a timeout or a refusal fail the test.
func (p *Pod) Probe(t testing.TB, protocol string, dst netip.Addr, port int) bool {
	var ok bool
	err := kerneltest.Do(p.NS, func() error {
		target := netip.AddrPortFrom(dst, uint16(port)).String()
		deadline := time.Now().Add(ProbeTimeout)
		c, err := net.DialTimeout(protocol, target, ProbeTimeout)
		if err != nil {
			if isBlocked(err) {
				return nil
			}
			return err
		}
		defer c.Close()
		c.SetDeadline(deadline)
		if protocol == "udp" {
			if _, err := c.Write([]byte("?")); err != nil {
				return err
			}
		}
		buf := make([]byte, 64)
		n, err := c.Read(buf)
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
			got[i] = c.From.Probe(t, c.Protocol, c.To, c.Port)
		}()
	}
	wg.Wait()
	for i, c := range cases {
		if got[i] != c.Want {
			t.Errorf("%s -> %s (%s) %s/%d: connected=%v, want %v", c.From.Name, c.ToName, c.To, c.Protocol, c.Port, got[i], c.Want)
		}
	}
}
