package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// routeOps records the kernel's notifications of changes to routes of ours
// (RouteProtocol) in one namespace, per prefix. Every route operation that
// changed the kernel shows up exactly once, whichever code path of the
// router made it, so counting them checks the applier from outside.
type routeOps struct {
	// mu protects the following fields.
	mu      sync.Mutex
	ops     map[netip.Prefix][]string // "add", "replace" or "del", in order
	err     error                     // the first error of the subscription
	changed chan struct{}             // signalled after each recorded op
}

// watchRouteOps subscribes to route changes in ns until the test ends.
func watchRouteOps(t *testing.T, ns netns.NsHandle) *routeOps {
	t.Helper()
	o := &routeOps{ops: map[netip.Prefix][]string{}, changed: make(chan struct{}, 1)}
	ch := make(chan netlink.RouteUpdate, 1024)
	done := make(chan struct{})
	err := netlink.RouteSubscribeWithOptions(ch, done, netlink.RouteSubscribeOptions{
		Namespace: &ns,
		// A burst must not overflow the socket: a lost notification would
		// be a miscount (and shows as ENOBUFS in err).
		ReceiveBufferSize: 8 << 20, ReceiveBufferForceSize: true,
		ErrorCallback: func(err error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.err == nil {
				o.err = err
			}
		},
	})
	if err != nil {
		t.Fatalf("subscribe to route changes: %v", err)
	}
	t.Cleanup(func() { close(done) })
	go func() {
		for u := range ch {
			dst, ok := prefixFromIPNet(u.Dst)
			if !ok || u.Protocol != RouteProtocol || u.Table != unix.RT_TABLE_MAIN {
				continue
			}
			op := "add"
			switch {
			case u.Type == unix.RTM_DELROUTE:
				op = "del"
			case u.NlFlags&unix.NLM_F_REPLACE != 0:
				op = "replace"
			}
			o.mu.Lock()
			o.ops[dst] = append(o.ops[dst], op)
			o.mu.Unlock()
			select {
			case o.changed <- struct{}{}:
			default:
			}
		}
	}()
	return o
}

// of returns the operations seen for p so far.
func (o *routeOps) of(t testing.TB, p netip.Prefix) []string {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		t.Fatalf("route change subscription: %v", o.err)
	}
	return slices.Clone(o.ops[p])
}

// total returns how many operations were seen for any prefix.
func (o *routeOps) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, ops := range o.ops {
		n += len(ops)
	}
	return n
}

// await waits until the last operation seen for p is op.
func (o *routeOps) await(t testing.TB, timeout time.Duration, p netip.Prefix, op string) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if ops := o.of(t, p); len(ops) > 0 && ops[len(ops)-1] == op {
			return
		}
		select {
		case <-o.changed:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s of %s; seen %v", timeout, op, p, o.of(t, p))
		}
	}
}

// expect fails the test unless exactly the given operations were seen for
// each prefix in want.
func (o *routeOps) expect(t testing.TB, want map[netip.Prefix][]string) {
	t.Helper()
	for p, w := range want {
		if got := o.of(t, p); !slices.Equal(got, w) {
			t.Errorf("route operations for %s: %v, want %v", p, got, w)
		}
	}
}

// markerPrefix is the k-th prefix a barrier advertises.
func markerPrefix(k int) netip.Prefix {
	return netip.MustParsePrefix(fmt.Sprintf("10.250.%d.0/24", k))
}
