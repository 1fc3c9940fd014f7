package watch

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Health tracks whether each backend keeps up. A backend is unhealthy once it
// has failed to sync — or, after start, not yet synced — for longer than the
// grace period (the sync period), so a transient failure that the next retry
// mends does not fail a liveness probe. Ready tells whether every backend has
// synced at least once.
type Health struct {
	clock clock.PassiveClock
	grace time.Duration

	// mu protects failing.
	mu      sync.Mutex
	failing map[string]failure
}

type failure struct {
	since       time.Time
	err         error
	neverSynced bool
}

var errNotSyncedYet = errors.New("not synced since start")

// NewHealth returns a Health that reports a backend unhealthy after it has
// failed for longer than grace.
func NewHealth(c clock.PassiveClock, grace time.Duration) *Health {
	return &Health{clock: c, grace: grace, failing: make(map[string]failure)}
}

// expect registers a backend that has not synced yet.
func (h *Health) expect(backend string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failing[backend] = failure{since: h.clock.Now(), err: errNotSyncedYet, neverSynced: true}
}

// record notes the result of one sync of backend.
func (h *Health) record(backend string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		delete(h.failing, backend)
		return
	}
	f, ok := h.failing[backend]
	if !ok {
		f.since = h.clock.Now()
	}
	f.err = err
	h.failing[backend] = f
}

// Ready returns nil once every backend has synced successfully at least once,
// else an error naming those that have not.
func (h *Health) Ready() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var waiting []string
	for name, f := range h.failing {
		if f.neverSynced {
			waiting = append(waiting, fmt.Sprintf("%s: %v", name, f.err))
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	sort.Strings(waiting)
	return fmt.Errorf("not synced yet: %s", strings.Join(waiting, "; "))
}

// Check returns nil when every backend is healthy, else an error naming each
// backend that has been failing for longer than the grace period.
func (h *Health) Check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var bad []string
	for name, f := range h.failing {
		if d := h.clock.Since(f.since); d > h.grace {
			bad = append(bad, fmt.Sprintf("%s failing for %s: %v", name, d.Round(time.Second), f.err))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("%s", strings.Join(bad, "; "))
}
