package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nfrouter/nfrouter/integration/cluster"
)

// ChurnResult is one implementation in the field report's scenario: web pods
// behind a NetworkPolicy replaced one at a time on the node it firewalls.
type ChurnResult struct {
	Impl         string `json:"impl"`
	Replicas     int    `json:"web_pods"`
	Replacements int    `json:"replacements"`
	// Enforced is from exec until the probe matrix first matched the policy.
	Enforced time.Duration `json:"policy_enforced_after_ns"`
	// InPlace are, per replacement, the time from its last API write until
	// the new pod's probes matched the policy.
	InPlace           []time.Duration `json:"in_place_after_ns"`
	CPUPerReplacement float64         `json:"cpu_seconds_per_replacement"`
	// Churn is the window CPU was read over: the replacements, their waits
	// and the settling pause after them; IdleCPU the CPU seconds per second
	// used afterwards with nothing changing, over as long: the part of
	// CPUPerReplacement any process spends standing still.
	Churn   time.Duration `json:"churn_ns"`
	IdleCPU float64       `json:"idle_cpu_seconds_per_second"`
	// ProcessesAtStart are those started before the first replacement,
	// ProcessesPerReplacement those started during the churn, divided by it.
	ProcessesAtStart        int     `json:"processes_at_start"`
	ProcessesPerReplacement float64 `json:"processes_per_replacement"`
	Error                   string  `json:"error,omitempty"`
	Load                    string  `json:"loadavg"`
}

// measureChurn runs the field report on node n alone (so that no routes
// between nodes are needed and each implementation has its own node): it
// starts the implementation, checks that it enforces the policy, then
// replaces web pods one at a time, waiting after each until the new pod's
// probes match the policy — the same wait for every implementation — and
// reads CPU (children included) and execve counts around the churn.
func measureChurn(ctx context.Context, o options, bed *cluster.Bed, peers peerBinaries, n *cluster.Node, im, memLimit string) ChurnResult {
	res := ChurnResult{Impl: im, Replicas: o.replicas, Replacements: o.replacements, Load: loadavg()}
	fail := func(err error) ChurnResult { res.Error = err.Error(); return res }
	fr, err := bed.SetupFieldReportOn(ctx, "churn-"+im, []*cluster.Node{n}, o.replicas)
	if err != nil {
		return fail(err)
	}
	if err := fr.CreateHeadless(ctx, bed); err != nil {
		return fail(err)
	}
	// Without a firewall nothing is denied: the probes that match the policy
	// later are the implementation's doing.
	unguarded, err := cluster.RunProbes(ctx, fr.Cases(), 250*time.Millisecond)
	if err != nil {
		return fail(err)
	}
	if len(cluster.Mismatches(unguarded)) == 0 {
		return fail(fmt.Errorf("the policy holds on %s before %s runs: the probes would prove nothing", n.Name, im))
	}
	begin := time.Now()
	a, err := start(ctx, o, bed, peers, n, im, memLimit)
	if err != nil {
		return fail(err)
	}
	defer a.stopAndKeepLog(filepath.Join(o.out, "churn-"+im+".log"))
	if err := converge(ctx, a, fr.Cases(), 3*time.Minute); err != nil {
		return fail(fmt.Errorf("%s does not enforce the field report's policy: %w; see %s", im, err, a.log))
	}
	res.Enforced = time.Since(begin)
	fmt.Printf("  policy enforced after %s (%d probes as the policy says)\n", res.Enforced.Round(time.Millisecond), len(fr.Cases()))
	// From a standing start, as in the services scenario.
	before, _, err := settle(a.pid, 2*time.Second, time.Minute)
	if err != nil {
		return fail(err)
	}
	churnBegin := time.Now()
	if res.ProcessesAtStart, err = a.execs(); err != nil {
		return fail(err)
	}
	profDone := make(chan struct{})
	if o.pprof && a.nfr != nil {
		// A guess at the churn's length: the profile covers most of it.
		secs := max(o.replacements/2, 1)
		go func() {
			defer close(profDone)
			if err := a.nfr.Fetch(ctx, "/debug/pprof/profile?seconds="+strconv.Itoa(secs), filepath.Join(o.out, "cpu-churn-"+im+".pb.gz")); err != nil {
				fmt.Println("  CPU profile:", err)
			}
		}()
	} else {
		close(profDone)
	}
	err = fr.Churn(ctx, bed, o.replacements, func(i int) error {
		done := time.Now()
		if err := converge(ctx, a, fr.CasesFor(fr.Web[i%len(fr.Web)]), time.Minute); err != nil {
			return fmt.Errorf("replacement %d: %w", i+1, err)
		}
		res.InPlace = append(res.InPlace, time.Since(done))
		return nil
	})
	if err != nil {
		return fail(err)
	}
	// The same pause after the last replacement: work that follows it counts.
	time.Sleep(2 * time.Second)
	after, err := cluster.ReadProcStat(a.pid())
	if err != nil {
		return fail(err)
	}
	res.Churn = time.Since(churnBegin) // the window the CPU was read over
	<-profDone
	execs, err := a.execs()
	if err != nil {
		return fail(err)
	}
	res.CPUPerReplacement = (after.CPUSeconds - before.CPUSeconds) / float64(o.replacements)
	res.ProcessesPerReplacement = float64(execs-res.ProcessesAtStart) / float64(o.replacements)
	fmt.Printf("  idle for %s (as long as the churn)\n", res.Churn.Round(time.Second))
	time.Sleep(res.Churn)
	idle, err := cluster.ReadProcStat(a.pid())
	if err != nil {
		return fail(err)
	}
	res.IdleCPU = (idle.CPUSeconds - after.CPUSeconds) / res.Churn.Seconds()
	q := quantiles(res.InPlace)
	fmt.Printf("  %d replacements in %s: CPU %.1f ms per replacement (idle: %.1f ms/s); %.1f processes per replacement (%d at start); in place after p50 %s max %s\n",
		o.replacements, res.Churn.Round(time.Millisecond), res.CPUPerReplacement*1000, res.IdleCPU*1000, res.ProcessesPerReplacement, res.ProcessesAtStart, q[0], q[3])
	return res
}

// converge probes until every case gives the answer the policy wants. The
// probes' short timeout bounds the wait's resolution; it is the same for
// every implementation.
func converge(ctx context.Context, a *agent, cases []cluster.ProbeCase, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		res, err := cluster.RunProbes(ctx, cases, 250*time.Millisecond)
		if err != nil {
			return err
		}
		bad := cluster.Mismatches(res)
		if len(bad) == 0 {
			return nil
		}
		select {
		case <-a.exits:
			return fmt.Errorf("exited")
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not converged within %s: %d mismatches, first: %s", timeout, len(bad), bad[0])
		}
	}
}
