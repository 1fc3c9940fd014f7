package cluster

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseMetricsSum(t *testing.T) {
	text := `# HELP nfrouter_watch_events_total x
# TYPE nfrouter_watch_events_total counter
nfrouter_watch_events_total{kind="Pod",result="changed"} 3
nfrouter_watch_events_total{kind="Pod",result="ignored"} 5
nfrouter_watch_events_total{kind="Service",result="ignored"} 2
nfrouter_syncs_total{backend="nftables",reason="initial",result="ok"} 1
go_goroutines 12
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"nfrouter_watch_events_total", nil, 10},
		{"nfrouter_watch_events_total", []string{`result="ignored"`}, 7},
		{"nfrouter_watch_events_total", []string{`kind="Pod"`, `result="changed"`}, 3},
		{"nfrouter_syncs_total", []string{`backend="nftables"`}, 1},
		{"go_goroutines", nil, 12},
		{"missing", nil, 0},
	} {
		if got := m.Sum(c.name, c.labels...); got != c.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, err := parseMetrics(strings.NewReader("bad_line_without_value\n")); err == nil {
		t.Error("a line without a value parsed")
	}
}

func TestIPPool(t *testing.T) {
	p := newIPPool(netip.MustParsePrefix("10.244.1.0/24"))
	a, _ := p.get()
	b, _ := p.get()
	if a.String() != "10.244.1.10" || b.String() != "10.244.1.11" {
		t.Fatalf("got %s, %s; want the first addresses from .10", a, b)
	}
	p.put(a)
	if c, _ := p.get(); c != a {
		t.Errorf("freed %s, then got %s; want it reused", a, c)
	}
	for range 245 - 2 {
		if _, err := p.get(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.get(); err == nil {
		t.Error("pool not exhausted after .10-.254")
	}
}
