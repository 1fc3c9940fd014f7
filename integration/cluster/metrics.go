package cluster

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Metrics are the samples of one scrape: series ("name{labels}" as exposed)
// to value. Histograms appear as their _sum, _count and _bucket series.
type Metrics map[string]float64

// parseMetrics reads the Prometheus text format; it needs no more than
// counters and histograms.
func parseMetrics(r io.Reader) (Metrics, error) {
	m := Metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics: bad line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: bad value in %q: %w", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// Sum adds the series of metric name whose labels include every one of
// labels (given as `key="value"`).
func (m Metrics) Sum(name string, labels ...string) float64 {
	var s float64
	for series, v := range m {
		n, rest, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
			}
		}
		if ok {
			s += v
		}
	}
	return s
}
