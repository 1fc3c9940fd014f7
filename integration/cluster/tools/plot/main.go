// Command plot reads bench-compare's results.json and draws two PNGs into
// -out: latency.png, the distribution of change latencies (write → kernel
// commit) per implementation and size, and scaling.png, each cost against
// the number of services.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

type report struct {
	Machine string   `json:"machine"`
	Results []result `json:"results"`
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
	if len(ok) == 0 {
		return fmt.Errorf("%s: no successful runs", in)
	}
	if err := latency(ok, filepath.Join(out, "latency.png")); err != nil {
		return err
	}
	if err := scaling(ok, filepath.Join(out, "scaling.png")); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", filepath.Join(out, "latency.png"), filepath.Join(out, "scaling.png"))
	return nil
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
