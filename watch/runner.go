package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/nfrouter/nfrouter/model"
)

// Sync reasons, the "reason" label of nfrouter_syncs_total.
const (
	ReasonInitial  = "initial"
	ReasonChange   = "change"
	ReasonPeriodic = "periodic"
	ReasonRetry    = "retry"
)

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	Store    *model.Store
	Backends []Backend
	// MinInterval is the least time between two syncs: changes arriving sooner
	// wait and are coalesced into one sync. The first change after a quiet
	// period is synced at once.
	MinInterval time.Duration
	// Period is the interval of full syncs that read back and repair the kernel.
	Period time.Duration
	// MaxRetryDelay caps the exponential backoff after a failed sync.
	MaxRetryDelay time.Duration
	// AfterInitialSync, when set, runs once the first sync has returned:
	// the moment the cold start's garbage can go (cmd/nfrouter returns it
	// to the OS, so that no later collection of it delays a change).
	AfterInitialSync func()
	Clock            clock.WithTicker
	Log              *slog.Logger
	Metrics          *Metrics
	Health           *Health
}

// Runner wakes the backends: at start, when the store changed (coalesced), on
// the periodic full check, and to retry failed syncs with backoff.
type Runner struct {
	cfg  RunnerConfig
	wake chan struct{}
	// states is used only by the Run goroutine.
	states []backendState
}

type backendState struct {
	Backend
	needFull bool // the next sync must be full: first sync, or after a failure
	failures int
}

const firstRetryDelay = 500 * time.Millisecond

// NewRunner returns a Runner; call Notify on changes and Run to sync.
func NewRunner(cfg RunnerConfig) *Runner {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.MaxRetryDelay == 0 {
		cfg.MaxRetryDelay = time.Minute
	}
	r := &Runner{cfg: cfg, wake: make(chan struct{}, 1)}
	for _, b := range cfg.Backends {
		r.states = append(r.states, backendState{Backend: b, needFull: true})
		cfg.Health.expect(b.Name())
	}
	return r
}

// Notify tells the Runner that the store changed. It never blocks; many
// notifications before the Runner wakes count as one.
func (r *Runner) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run syncs every backend once, then on changes, periodically and on retries,
// until ctx is done. It returns nil when ctx is done: sync failures are
// reported through health and metrics and retried, never returned.
func (r *Runner) Run(ctx context.Context) error {
	c := r.cfg.Clock
	periodic := c.NewTimer(r.cfg.Period)
	defer periodic.Stop()
	var retry clock.Timer
	var retryC <-chan time.Time
	stopRetry := func() {
		if retry != nil {
			retry.Stop()
			retry, retryC = nil, nil
		}
	}
	defer stopRetry()

	reason := ReasonInitial
	var last time.Time
	for {
		if synced, _ := r.syncAll(ctx, reason); synced {
			last = c.Now()
		}
		if reason == ReasonInitial && r.cfg.AfterInitialSync != nil {
			r.cfg.AfterInitialSync()
		}
		stopRetry()
		if d, ok := r.retryDelay(); ok {
			retry = c.NewTimer(d)
			retryC = retry.C()
		}

		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
			reason = ReasonChange
		case <-periodic.C():
			reason = ReasonPeriodic
			periodic.Reset(r.cfg.Period)
		case <-retryC:
			reason = ReasonRetry
		}
		// Coalesce: changes arriving during the minimum interval join this sync.
		if wait := r.cfg.MinInterval - c.Since(last); wait > 0 && reason == ReasonChange {
			t := c.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
			}
		}
	}
}

// SyncOnce runs one full sync of every backend and returns their errors.
func (r *Runner) SyncOnce(ctx context.Context) error {
	for i := range r.states {
		r.states[i].needFull = true
	}
	_, err := r.syncAll(ctx, ReasonInitial)
	return err
}

// syncAll takes one snapshot and hands it to every backend that has something
// to do. A periodic sync is full for every backend; after a failure a backend
// gets full syncs until one succeeds, since it may have missed changes. It
// reports whether any backend synced.
func (r *Runner) syncAll(ctx context.Context, reason string) (bool, error) {
	state, changes := r.cfg.Store.Snapshot()
	synced := false
	var errs []error
	for i := range r.states {
		b := &r.states[i]
		c := changes.Only(b.Kinds())
		if reason == ReasonPeriodic || b.needFull {
			c.Full = true
		}
		if c.Empty() {
			continue
		}
		synced = true
		if err := r.syncBackend(ctx, b, state, c, reason); err != nil {
			errs = append(errs, err)
		}
	}
	return synced, errors.Join(errs...)
}

func (r *Runner) syncBackend(ctx context.Context, b *backendState, state *model.State, c *model.Changes, reason string) error {
	name := b.Name()
	m := r.cfg.Metrics
	start := r.cfg.Clock.Now()
	err := b.Sync(ctx, state, c)
	took := r.cfg.Clock.Since(start)
	m.syncDuration.WithLabelValues(name).Observe(took.Seconds())
	r.cfg.Health.record(name, err)
	if err != nil {
		b.needFull = true
		b.failures++
		m.syncs.WithLabelValues(name, reason, "error").Inc()
		r.cfg.Log.Error("Sync failed", "backend", name, "reason", reason, "full", c.Full,
			"failures", b.failures, "duration", took, "error", err)
		return fmt.Errorf("%s: %w", name, err)
	}
	b.needFull = false
	b.failures = 0
	m.syncs.WithLabelValues(name, reason, "ok").Inc()
	m.changedKeys.WithLabelValues(name).Observe(float64(c.Len()))
	if !c.Since.IsZero() {
		m.syncLatency.WithLabelValues(name).Observe(r.cfg.Clock.Since(c.Since).Seconds())
	}
	for _, t := range c.TriggerTimes {
		m.programming.WithLabelValues(name).Observe(r.cfg.Clock.Since(t).Seconds())
	}
	level := slog.LevelDebug
	if c.Full {
		level = slog.LevelInfo
	}
	r.cfg.Log.Log(ctx, level, "Synced", "backend", name, "reason", reason, "full", c.Full,
		"changedKeys", c.Len(), "generation", state.Generation, "duration", took)
	return nil
}

// retryDelay returns the backoff before retrying failed backends: doubling
// from firstRetryDelay with the most failures, capped at MaxRetryDelay.
func (r *Runner) retryDelay() (time.Duration, bool) {
	most := 0
	for _, b := range r.states {
		most = max(most, b.failures)
	}
	if most == 0 {
		return 0, false
	}
	d := firstRetryDelay
	for i := 1; i < most && d < r.cfg.MaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, r.cfg.MaxRetryDelay), true
}
