package watch

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nfrouter/nfrouter/model"
)

type runnerFixture struct {
	clock   *clocktesting.FakeClock
	store   *model.Store
	runner  *Runner
	health  *Health
	metrics *Metrics
	// afterInitial counts the calls of AfterInitialSync.
	afterInitial atomic.Int32
}

const (
	testMinInterval = time.Second
	testPeriod      = time.Minute
	testGrace       = 10 * time.Second
)

func startRunner(t *testing.T, backends ...Backend) *runnerFixture {
	t.Helper()
	f := &runnerFixture{clock: clocktesting.NewFakeClock(time.Unix(1000, 0)), metrics: NewMetrics(nil)}
	f.store = model.NewStore(f.clock.Now)
	f.health = NewHealth(f.clock, testGrace)
	f.runner = NewRunner(RunnerConfig{
		Store: f.store, Backends: backends, MinInterval: testMinInterval, Period: testPeriod,
		MaxRetryDelay: 4 * time.Second, Clock: f.clock, Log: discardLogger(), Metrics: f.metrics, Health: f.health,
		AfterInitialSync: func() { f.afterInitial.Add(1) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.runner.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return f
}

// step advances the fake clock once the runner waits on the given number of
// timers: 1 when idle (the periodic timer), 2 while it coalesces or has a
// retry pending.
func (f *runnerFixture) step(t *testing.T, timers int, d time.Duration) {
	t.Helper()
	eventually(t, "runner to wait on its timers", func() bool { return f.clock.Waiters() == timers })
	f.clock.Step(d)
}

// setPod changes the model and notifies the runner, as the Feeder does.
func (f *runnerFixture) setPod(name, ip string) {
	f.store.SetPod(model.PodKey{Namespace: "ns", Name: name},
		&model.Pod{Namespace: "ns", Name: name, IPs: []netip.Addr{netip.MustParseAddr(ip)}})
	f.runner.Notify()
}

func TestRunnerCoalescesChangesWithinMinInterval(t *testing.T) {
	fw := newRecorder("firewall", model.AllKinds)
	f := startRunner(t, fw)
	if c := fw.waitCall(t, 1); !c.changes.Full {
		t.Fatalf("first sync not full: %+v", c.changes)
	}

	// Changes within MinInterval of the last sync wait for it, then go as one.
	f.setPod("a", "10.0.0.1")
	f.setPod("b", "10.0.0.2")
	f.step(t, 2, testMinInterval/2)
	f.setPod("c", "10.0.0.3")
	f.step(t, 2, testMinInterval/2)
	if c := fw.waitCall(t, 2); c.changes.Full || c.changes.Len() != 3 {
		t.Errorf("coalesced sync: full=%v keys=%d, want an incremental sync of 3 keys", c.changes.Full, c.changes.Len())
	}
	// The notification for c is still queued; it finds nothing left to sync.
	f.step(t, 2, 10*testMinInterval)
	f.step(t, 1, 0)
	if got := fw.count(); got != 2 {
		t.Errorf("%d syncs, want 2", got)
	}

	// After a quiet period the first change syncs at once.
	f.setPod("d", "10.0.0.4")
	if c := fw.waitCall(t, 3); c.changes.Len() != 1 || !c.changes.Pods.Has(model.PodKey{Namespace: "ns", Name: "d"}) {
		t.Errorf("sync after quiet period = %+v", c.changes)
	}
	if n := f.afterInitial.Load(); n != 1 {
		t.Errorf("AfterInitialSync ran %d times over 3 syncs, want once", n)
	}
}

func TestRunnerWakesOnlyBackendsThatReadTheChangedKinds(t *testing.T) {
	fw := newRecorder("firewall", model.KindPods|model.KindNamespaces|model.KindPolicies)
	proxy := newRecorder("proxy", model.KindServicePorts|model.KindEndpoints|model.KindNodes)
	f := startRunner(t, fw, proxy)
	fw.waitCall(t, 1)
	proxy.waitCall(t, 1)

	f.setPod("a", "10.0.0.1")
	f.step(t, 2, testMinInterval)
	if c := fw.waitCall(t, 2); c.changes.Len() != 1 {
		t.Errorf("firewall changes = %+v", c.changes)
	}
	// The proxy is woken by the periodic check only, and then sees the state.
	f.step(t, 1, testPeriod)
	if c := proxy.waitCall(t, 2); !c.changes.Full || c.state.Pods.Get(model.PodKey{Namespace: "ns", Name: "a"}) == nil {
		t.Errorf("proxy's periodic sync = %+v", c.changes)
	}
	fw.waitCall(t, 3)
	f.step(t, 1, 0)
	if got := proxy.count(); got != 2 {
		t.Errorf("proxy synced %d times, want 2 (initial, periodic)", got)
	}
}

func TestRunnerRetriesFailuresWithFullSyncsAndBackoff(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	fw := newRecorder("firewall", model.AllKinds)
	fw.fail = func(int) error {
		if failing.Load() {
			return errors.New("netlink: no buffer space")
		}
		return nil
	}
	f := startRunner(t, fw)
	fw.waitCall(t, 1)
	if err := f.health.Check(); err != nil {
		t.Errorf("unhealthy right after one failure: %v", err)
	}

	// Retries back off: 0.5s, 1s, 2s, 4s, 4s (capped), each a full sync.
	calls := 1
	for _, d := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		f.step(t, 2, d-time.Millisecond)
		f.step(t, 2, 0) // still waiting: nothing fired early
		if got := fw.count(); got != calls {
			t.Fatalf("retried before its %s backoff", d)
		}
		f.step(t, 2, time.Millisecond)
		calls++
		if c := fw.waitCall(t, calls); !c.changes.Full {
			t.Errorf("retry after %s not full", d)
		}
	}

	// Failing for 11.5s, longer than the grace period, makes the node unhealthy.
	if err := f.health.Check(); err == nil {
		t.Error("healthy after failing for longer than the sync period")
	}

	failing.Store(false)
	calls = fw.count()
	f.step(t, 2, 4*time.Second)
	fw.waitCall(t, calls+1)
	f.step(t, 1, 0)
	if err := f.health.Check(); err != nil {
		t.Errorf("still unhealthy after a successful sync: %v", err)
	}
	// Back to incremental syncs once one succeeded.
	f.clock.Step(testMinInterval)
	f.setPod("a", "10.0.0.1")
	if c := fw.waitCall(t, calls+2); c.changes.Full {
		t.Error("sync after recovery still full")
	}
}

func TestSyncOnceReturnsBackendErrors(t *testing.T) {
	fw := newRecorder("firewall", model.AllKinds)
	fw.fail = func(int) error { return errors.New("boom") }
	r := NewRunner(RunnerConfig{Store: model.NewStore(nil), Backends: []Backend{fw}, Period: time.Minute,
		Log: discardLogger(), Metrics: NewMetrics(nil), Health: NewHealth(clocktesting.NewFakeClock(time.Now()), time.Minute)})
	err := r.SyncOnce(context.Background())
	if err == nil || err.Error() != "firewall: boom" {
		t.Errorf("SyncOnce = %v, want firewall: boom", err)
	}
}
