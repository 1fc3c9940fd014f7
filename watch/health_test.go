package watch

import (
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestHealthWaitsForTheFirstSyncWithinTheGracePeriod(t *testing.T) {
	c := clocktesting.NewFakeClock(time.Unix(1000, 0))
	h := NewHealth(c, time.Minute)
	h.expect("firewall")
	h.expect("proxy")

	if err := h.Check(); err != nil {
		t.Errorf("unhealthy at start: %v", err)
	}
	if err := h.Ready(); err == nil || !strings.Contains(err.Error(), "firewall") {
		t.Errorf("Ready at start = %v, want not ready naming the firewall", err)
	}

	h.record("firewall", nil)
	h.record("proxy", errors.New("no IPVS"))
	if err := h.Ready(); err == nil || strings.Contains(err.Error(), "firewall") || !strings.Contains(err.Error(), "no IPVS") {
		t.Errorf("Ready = %v, want only the proxy with its error", err)
	}

	c.Step(time.Minute + time.Second)
	if err := h.Check(); err == nil || !strings.Contains(err.Error(), "proxy failing") {
		t.Errorf("Check after the grace period = %v, want the proxy failing", err)
	}

	h.record("proxy", nil)
	if err := h.Check(); err != nil {
		t.Errorf("Check after recovery = %v", err)
	}
	if err := h.Ready(); err != nil {
		t.Errorf("Ready after both synced = %v", err)
	}
	// A later failure makes it unhealthy again after the grace, never unready.
	h.record("firewall", errors.New("ENOBUFS"))
	c.Step(2 * time.Minute)
	if h.Check() == nil || h.Ready() != nil {
		t.Errorf("after a long failure: Check %v, Ready %v", h.Check(), h.Ready())
	}
}
