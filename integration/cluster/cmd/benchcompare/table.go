package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// markdown renders one table per size: a column per implementation and,
// where kube-proxy ran, its ratio to nfrouter with deploy/'s settings.
func markdown(rep Report, memLimit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. Command: `%s`. Started %s.\n", rep.Machine, rep.Command, rep.Started)
	if rep.NFRouterEnv != "" {
		fmt.Fprintf(&b, "nfrouter ran with this environment beyond deploy/'s: `%s`.\n", rep.NFRouterEnv)
	}
	var sizes []int
	for _, r := range rep.Results {
		if !slices.Contains(sizes, r.Services) {
			sizes = append(sizes, r.Services)
		}
	}
	label := map[string]string{
		"kube-proxy":       "kube-proxy nftables",
		"nfrouter":         "nfrouter (deploy/: GOMEMLIMIT=" + memLimit + ")",
		"nfrouter-nolimit": "nfrouter without GOMEMLIMIT",
	}
	churnTable(&b, rep.Churn, memLimit)
	for _, size := range sizes {
		var rs []Result
		for _, r := range rep.Results {
			if r.Services == size {
				rs = append(rs, r)
			}
		}
		var kp, nf *Result
		for i := range rs {
			switch rs[i].Impl {
			case "kube-proxy":
				kp = &rs[i]
			case "nfrouter":
				nf = &rs[i]
			}
		}
		withRatio := kp != nil && nf != nil && kp.Error == "" && nf.Error == ""
		fmt.Fprintf(&b, "\n**%d ClusterIP services × %d endpoints**\n\n", size, rs[0].Endpoints)
		var columns []string
		for _, r := range rs {
			name := label[r.Impl]
			if r.Impl == "nfrouter" && r.MemLimit != "" && r.MemLimit != memLimit {
				name = "nfrouter (deploy/ scaled: GOMEMLIMIT=" + r.MemLimit + ")"
			}
			columns = append(columns, name)
		}
		writeHead(&b, columns, withRatio, "kube-proxy ÷ nfrouter")
		row := func(name string, cell func(Result) string, ratio func(kp, nf Result) string) {
			writeRow(&b, name, rs, func(r Result) string { return r.Error }, cell, withRatio, func() string { return ratio(*kp, *nf) })
		}
		x := func(a, c float64) string {
			if c == 0 {
				return "n/a (0 measured)" // below /proc's 10 ms tick over the run
			}
			return fmt.Sprintf("%.0f×", a/c)
		}
		row("cold start (exec → ClusterIP answers)", func(r Result) string { return roundDur(r.ColdStart).String() },
			func(kp, nf Result) string { return x(kp.ColdStart.Seconds(), nf.ColdStart.Seconds()) })
		row("change, write → kernel commit, p50 / p90 / p99 / max", func(r Result) string {
			q := quantiles(r.Latencies)
			s := fmt.Sprintf("%s / %s / %s / %s", ms(q[0]), ms(q[1]), ms(q[2]), ms(q[3]))
			if r.Failed > 0 {
				s += fmt.Sprintf(" (%d not seen)", r.Failed)
			}
			return s
		}, func(kp, nf Result) string {
			a, c := quantiles(kp.Latencies), quantiles(nf.Latencies)
			return x(a[0].Seconds(), c[0].Seconds()) + " / " + x(a[2].Seconds(), c[2].Seconds()) + " (p50 / p99)"
		})
		if nf != nil && len(nf.AgentLatencies()) > 0 {
			row("of which: write → watch event delivered (API server, etcd) / delivered → commit (the agent), p50 / p99", func(r Result) string {
				d, a := quantiles(r.Delivered), quantiles(r.AgentLatencies())
				return fmt.Sprintf("%s / %s (API) · %s / %s (agent)", ms(d[0]), ms(d[2]), ms(a[0]), ms(a[2]))
			}, func(kp, nf Result) string {
				a, c := quantiles(kp.AgentLatencies()), quantiles(nf.AgentLatencies())
				return x(a[0].Seconds(), c[0].Seconds()) + " / " + x(a[2].Seconds(), c[2].Seconds()) + " (agent p50 / p99)"
			})
		}
		row("CPU per endpoint change", func(r Result) string { return fmt.Sprintf("%.1f ms", r.CPUPerChange*1000) },
			func(kp, nf Result) string { return x(kp.CPUPerChange, nf.CPUPerChange) })
		row("RSS after cold start / peak", func(r Result) string { return fmt.Sprintf("%s / %s", mibN(r.RSSCold), mib(r.RSSPeak)) },
			func(kp, nf Result) string {
				return fmt.Sprintf("%.2f× (peak)", float64(kp.RSSPeak)/float64(nf.RSSPeak))
			})
		row("processes started", func(r Result) string { return fmt.Sprint(r.Processes) },
			func(kp, nf Result) string { return fmt.Sprintf("%d vs %d", kp.Processes, nf.Processes) })
		row("load average at start", func(r Result) string { return r.Load }, func(kp, nf Result) string { return "" })
	}
	return b.String()
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) + " ms"
}

func mibN(b int64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// churnTable renders the field report's scenario: a column per
// implementation and, where both ran, kube-router's ratio to nfrouter.
func churnTable(b *strings.Builder, rs []ChurnResult, memLimit string) {
	if len(rs) == 0 {
		return
	}
	label := map[string]string{
		"nfrouter":    "nfrouter (deploy/: GOMEMLIMIT=" + memLimit + ")",
		"kube-router": "kube-router v2.1.0 (firewall only)",
	}
	var kr, nf *ChurnResult
	for i := range rs {
		switch rs[i].Impl {
		case "kube-router":
			kr = &rs[i]
		case "nfrouter":
			nf = &rs[i]
		}
	}
	withRatio := kr != nil && nf != nil && kr.Error == "" && nf.Error == ""
	fmt.Fprintf(b, "\n**Field report: pod churn with a NetworkPolicy** (%d web pods with 3 ports on one node, a frontend allowed to reach http only, a pod allowed nothing; %d replacements of 8 API writes each, the next one after the new pod's probes match the policy)\n\n", rs[0].Replicas, rs[0].Replacements)
	var columns []string
	for _, r := range rs {
		columns = append(columns, label[r.Impl])
	}
	writeHead(b, columns, withRatio, "kube-router ÷ nfrouter")
	row := func(name string, cell func(ChurnResult) string, ratio func(kr, nf ChurnResult) string) {
		writeRow(b, name, rs, func(r ChurnResult) string { return r.Error }, cell, withRatio, func() string { return ratio(*kr, *nf) })
	}
	row("CPU per pod replacement (children included)", func(r ChurnResult) string { return fmt.Sprintf("%.1f ms", r.CPUPerReplacement*1000) },
		func(kr, nf ChurnResult) string {
			if nf.CPUPerReplacement == 0 {
				return "n/a (0 measured)"
			}
			return fmt.Sprintf("%.0f×", kr.CPUPerReplacement/nf.CPUPerReplacement)
		})
	row("of which idle (CPU with nothing changing, over as long as the churn)", func(r ChurnResult) string {
		return fmt.Sprintf("%.1f ms (%.2f ms/s over %s)", r.IdleCPU*r.Churn.Seconds()/float64(r.Replacements)*1000, r.IdleCPU*1000, r.Churn.Round(time.Second))
	}, func(kr, nf ChurnResult) string { return "" })
	row("processes started per pod replacement (at start-up)", func(r ChurnResult) string {
		return fmt.Sprintf("%.1f (%d)", r.ProcessesPerReplacement, r.ProcessesAtStart)
	}, func(kr, nf ChurnResult) string {
		return fmt.Sprintf("%.1f vs %.1f", kr.ProcessesPerReplacement, nf.ProcessesPerReplacement)
	})
	row("new pod's policy in place, p50 / max (probe resolution 250 ms)", func(r ChurnResult) string {
		q := quantiles(r.InPlace)
		return fmt.Sprintf("%s / %s", ms(q[0]), ms(q[3]))
	}, func(kr, nf ChurnResult) string { return "" })
	row("policy enforced after start", func(r ChurnResult) string { return roundDur(r.Enforced).String() },
		func(kr, nf ChurnResult) string { return "" })
	row("load average at start", func(r ChurnResult) string { return r.Load }, func(kr, nf ChurnResult) string { return "" })
}

// writeHead writes a table's header: a column per implementation and, with
// ratio, the ratio's column.
func writeHead(b *strings.Builder, columns []string, ratio bool, ratioTitle string) {
	b.WriteString("|")
	for _, c := range columns {
		b.WriteString(" | " + c)
	}
	if ratio {
		b.WriteString(" | " + ratioTitle)
	}
	b.WriteString(" |\n|---" + strings.Repeat("|---", len(columns)+boolInt(ratio)) + "|\n")
}

// writeRow writes one row: each result's cell, or why it failed, then the
// ratio when there is one.
func writeRow[R any](b *strings.Builder, name string, rs []R, failed, cell func(R) string, ratio bool, ratioCell func() string) {
	b.WriteString("| " + name)
	for _, r := range rs {
		if err := failed(r); err != "" {
			b.WriteString(" | failed: " + err)
			continue
		}
		b.WriteString(" | " + cell(r))
	}
	if ratio {
		b.WriteString(" | " + ratioCell())
	}
	b.WriteString(" |\n")
}
