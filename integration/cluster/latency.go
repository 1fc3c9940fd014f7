package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// WaitEnforced probes c until its answer is c.Want and returns the time from
// since until the first probe that showed it. A probe that wants "connected"
// is retried with a 3 ms timeout (the resolution); one that wants
// "blocked" counts from the start of the first attempt that got no answer
// within 100 ms (an allowed connection between namespaces answers in well
// under a millisecond).
func WaitEnforced(ctx context.Context, c ProbeCase, since time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := since.Add(timeout)
	per := 3 * time.Millisecond
	if !c.Want {
		per = 100 * time.Millisecond
	}
	for {
		at := time.Now()
		got, err := c.From.Probe(c.Protocol, c.To.IP, c.Port, per)
		if err != nil {
			return 0, err
		}
		if got == c.Want {
			if c.Want {
				return time.Since(since), nil
			}
			return at.Sub(since), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("%s: still connected=%v after %s", c, got, timeout)
		}
	}
}

// Distribution summarises latencies: count, min, median, p90, max.
func Distribution(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1))] }
	var all []string
	for _, d := range s {
		all = append(all, d.Round(100*time.Microsecond).String())
	}
	return fmt.Sprintf("n=%d min=%s median=%s p90=%s max=%s [%s]", len(s), q(0).Round(100*time.Microsecond),
		q(0.5).Round(100*time.Microsecond), q(0.9).Round(100*time.Microsecond), q(1).Round(100*time.Microsecond), strings.Join(all, " "))
}
