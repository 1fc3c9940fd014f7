package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The committed results.md was rendered from the committed results.json:
// rendering them again must give it back, byte for byte.
func TestMarkdownRendersCommittedResults(t *testing.T) {
	raw, err := os.ReadFile("results/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	memLimit := ""
	for _, r := range rep.Results {
		if r.Impl == "nfrouter" && r.Services*r.Endpoints <= deploySizedFor {
			memLimit = r.MemLimit
		}
	}
	want, err := os.ReadFile("results/results.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := markdown(rep, memLimit); got != string(want) {
		t.Errorf("markdown(results.json) differs from results.md:\n%s", got)
	}
}

// A change's latency splits into the API server's delivery and the agent's
// share, and the table shows both once every change has its delivery.
func TestMarkdownSplitsChangeLatency(t *testing.T) {
	ms := func(v ...float64) []time.Duration {
		var ds []time.Duration
		for _, f := range v {
			ds = append(ds, time.Duration(f*float64(time.Millisecond)))
		}
		return ds
	}
	nf := Result{Impl: "nfrouter", Services: 10, Endpoints: 1, Latencies: ms(6, 8), Delivered: ms(5, 4)}
	kp := Result{Impl: "kube-proxy", Services: 10, Endpoints: 1, Latencies: ms(500, 600), Delivered: ms(4, 5)}
	if got, want := nf.AgentLatencies(), ms(1, 4); !slices.Equal(got, want) {
		t.Errorf("AgentLatencies = %v, want %v", got, want)
	}
	table := markdown(Report{Results: []Result{nf, kp}}, "90MiB")
	for _, want := range []string{
		"| 4.0 ms / 5.0 ms (API) · 1.0 ms / 4.0 ms (agent) | 4.0 ms / 5.0 ms (API) · 496.0 ms / 595.0 ms (agent) | 496× / 149× (agent p50 / p99) |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	nf.Delivered = nil
	if table := markdown(Report{Results: []Result{nf, kp}}, "90MiB"); strings.Contains(table, "(agent)") {
		t.Errorf("a run without deliveries shows the split:\n%s", table)
	}
}
