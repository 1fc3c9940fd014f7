package watch

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Health tracks whether each backend keeps up. A backend is unhealthy once it
// has failed to sync for longer than the grace period (the sync period), so a
// transient failure that the next retry mends does not fail a liveness probe.
type Health struct {
	clock clock.PassiveClock
	grace time.Duration

	// mu protects failing.
	mu      sync.Mutex
	failing map[string]failure
}

type failure struct {
	since time.Time
	err   error
}

// NewHealth returns a Health that reports a backend unhealthy after it has
// failed for longer than grace.
func NewHealth(c clock.PassiveClock, grace time.Duration) *Health {
	return &Health{clock: c, grace: grace, failing: make(map[string]failure)}
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
