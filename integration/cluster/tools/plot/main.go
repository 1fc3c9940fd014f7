// Command plot reads bench-compare's results.json and draws PNGs into -out:
// latency.png, the distribution of change latencies (write → kernel commit)
// per implementation and size, and scaling.png, each cost against the number
// of services (the services scenario); churn.png, CPU per pod replacement per
// implementation (the field report's churn scenario).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// result mirrors the fields of benchcompare's Result that the plots use.
type result struct {
	Impl         string          `json:"impl"`
	Services     int             `json:"services"`
	ColdStart    time.Duration   `json:"cold_start_ns"`
	Latencies    []time.Duration `json:"change_latencies_ns"`
	CPUPerChange float64         `json:"cpu_seconds_per_change"`
	RSSPeak      int64           `json:"rss_peak_bytes"`
	Error        string          `json:"error"`
}

// churnResult mirrors the fields of benchcompare's ChurnResult that the plot
// uses.
type churnResult struct {
	Impl                    string  `json:"impl"`
	CPUPerReplacement       float64 `json:"cpu_seconds_per_replacement"`
	ProcessesPerReplacement float64 `json:"processes_per_replacement"`
	Error                   string  `json:"error"`
}

type report struct {
	Machine string        `json:"machine"`
	Results []result      `json:"results"`
	Churn   []churnResult `json:"churn"`
}

func main() {
	in := flag.String("in", "results.json", "bench-compare's results")
	out := flag.String("out", ".", "directory for the PNGs")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var ok []result
	for _, r := range rep.Results {
		if r.Error == "" {
			ok = append(ok, r)
		}
	}
	var churnOK []churnResult
	for _, r := range rep.Churn {
		if r.Error == "" {
			churnOK = append(churnOK, r)
		}
	}
	if len(ok) == 0 && len(churnOK) == 0 {
		return fmt.Errorf("%s: no successful runs", in)
	}
	var wrote []string
	if len(ok) > 0 {
		if err := latency(ok, filepath.Join(out, "latency.png")); err != nil {
			return err
		}
		if err := scaling(ok, filepath.Join(out, "scaling.png")); err != nil {
			return err
		}
		wrote = append(wrote, filepath.Join(out, "latency.png"), filepath.Join(out, "scaling.png"))
	}
	if len(churnOK) > 0 {
		if err := churn(churnOK, filepath.Join(out, "churn.png")); err != nil {
			return err
		}
		wrote = append(wrote, filepath.Join(out, "churn.png"))
	}
	fmt.Printf("wrote %s\n", strings.Join(wrote, ", "))
	return nil
}

// churn draws CPU per pod replacement as one bar per implementation, on a
// linear axis so that the bars' lengths compare as the costs do, labelled
// with the value and the processes started per replacement.
func churn(rs []churnResult, path string) error {
	p := plot.New()
	p.Title.Text = "Pod churn with a NetworkPolicy: CPU per pod replacement"
	p.Y.Label.Text = "CPU ms per replacement"
	vals := make(plotter.Values, len(rs))
	var names []string
	var labels []string
	var pts plotter.XYs
	for i, r := range rs {
		vals[i] = r.CPUPerReplacement * 1000
		names = append(names, r.Impl)
		labels = append(labels, fmt.Sprintf("%.1f ms, %.1f processes", r.CPUPerReplacement*1000, r.ProcessesPerReplacement))
		pts = append(pts, plotter.XY{X: float64(i), Y: vals[i]})
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(40))
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(0)
	p.Add(bars)
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = draw.XCenter
		l.Offset.Y = vg.Points(4)
	}
	p.Add(l)
	p.NominalX(names...)
	p.Y.Max *= 1.15 // room for the labels
	p.Add(plotter.NewGrid())
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

func impls(rs []result) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.Impl) {
			out = append(out, r.Impl)
		}
	}
	return out
}

// latency draws each run's latencies as an empirical CDF on a log axis:
// kube-proxy's and nfrouter's are orders of magnitude apart.
func latency(rs []result, path string) error {
	p := plot.New()
	p.Title.Text = "EndpointSlice write → nftables commit"
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "fraction of changes"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = false
	p.Legend.Left = false
	names := impls(rs)
	for _, r := range rs {
		if len(r.Latencies) == 0 {
			continue
		}
		s := slices.Clone(r.Latencies)
		slices.Sort(s)
		pts := make(plotter.XYs, len(s))
		for i, d := range s {
			pts[i].X = max(float64(d)/float64(time.Millisecond), 0.01)
			pts[i].Y = float64(i+1) / float64(len(s))
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(slices.Index(names, r.Impl))
		l.Dashes = plotutil.Dashes(sizeIndex(rs, r.Services))
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s, %d svc", r.Impl, r.Services), l)
	}
	p.Add(plotter.NewGrid())
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

func sizeIndex(rs []result, size int) int {
	var sizes []int
	for _, r := range rs {
		if !slices.Contains(sizes, r.Services) {
			sizes = append(sizes, r.Services)
		}
	}
	slices.Sort(sizes)
	return slices.Index(sizes, size)
}

// scaling draws four panels: cold start, change p50, CPU per change and
// peak RSS against the number of services, one line per implementation.
func scaling(rs []result, path string) error {
	type metric struct {
		title, unit string
		log         bool
		value       func(result) float64
	}
	metrics := []metric{
		{"cold start", "s", true, func(r result) float64 { return r.ColdStart.Seconds() }},
		{"change latency p50", "ms", true, func(r result) float64 { return median(r.Latencies) }},
		{"CPU per change", "ms", true, func(r result) float64 { return max(r.CPUPerChange*1000, 0.1) }},
		{"peak RSS", "MiB", false, func(r result) float64 { return float64(r.RSSPeak) / (1 << 20) }},
	}
	const w, h = 10 * vg.Inch, 7 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{{nil, nil}, {nil, nil}}, tiles, dc)
	names := impls(rs)
	for i, m := range metrics {
		p := plot.New()
		p.Title.Text = m.title
		p.X.Label.Text = "ClusterIP services (×10 endpoints)"
		p.Y.Label.Text = m.unit
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		if m.log {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		p.Legend.Top = true
		p.Legend.Left = true
		for j, name := range names {
			var pts plotter.XYs
			for _, r := range rs {
				if r.Impl == name {
					pts = append(pts, plotter.XY{X: float64(r.Services), Y: m.value(r)})
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color, s.Color = plotutil.Color(j), plotutil.Color(j)
			s.Shape = plotutil.Shape(j)
			p.Add(l, s)
			p.Legend.Add(name, l, s)
		}
		p.Add(plotter.NewGrid())
		p.Draw(canvases[i/2][i%2])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[(len(s)-1)/2]) / float64(time.Millisecond)
}
