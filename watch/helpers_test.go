package watch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nfrouter/nfrouter/model"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// recorder is a Backend that records what each Sync received.
type recorder struct {
	name  string
	kinds model.Kinds
	fail  func(call int) error // nil: never fails

	mu    sync.Mutex
	calls []call
}

type call struct {
	state   *model.State
	changes *model.Changes
}

func newRecorder(name string, kinds model.Kinds) *recorder {
	return &recorder{name: name, kinds: kinds}
}

func (r *recorder) Name() string       { return r.name }
func (r *recorder) Kinds() model.Kinds { return r.kinds }

func (r *recorder) Sync(_ context.Context, s *model.State, c *model.Changes) error {
	r.mu.Lock()
	r.calls = append(r.calls, call{s, c})
	n := len(r.calls)
	r.mu.Unlock()
	if r.fail != nil {
		return r.fail(n)
	}
	return nil
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// waitCall waits for the n-th Sync call (counting from 1) and returns it.
func (r *recorder) waitCall(t *testing.T, n int) call {
	t.Helper()
	eventually(t, fmt.Sprintf("%s sync #%d", r.name, n), func() bool { return r.count() >= n })
	return r.snapshot()[n-1]
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

func eventCount(m *Metrics, kind, result string) int {
	return int(testutil.ToFloat64(m.events.WithLabelValues(kind, result)))
}
