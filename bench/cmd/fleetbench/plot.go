package main

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var backendColors = map[string]color.Color{
	"sqlite":         color.RGBA{0x88, 0x88, 0x88, 0xff},
	"postgres":       color.RGBA{0x1f, 0x77, 0xb4, 0xff},
	"postgres-river": color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	"redis-cluster":  color.RGBA{0xd6, 0x27, 0x28, 0xff},
	"redis":          color.RGBA{0xff, 0x7f, 0x0e, 0xff},
}

// plot draws turns per second, and the p99 turn latency, against the
// worker processes: one line per backend and session count (solid for the
// larger count, dashed for the others).
func (r *report) plot(throughput, p99 string) error {
	if err := r.plotOne(throughput, "Fleet: turns per second against worker processes", "turns per second",
		func(x row) float64 { return x.res.TurnsPerSecond() },
		func(m int) float64 { return float64(m) / r.sim.ModelLatency.Seconds() }); err != nil {
		return err
	}
	return r.plotOne(p99, "Fleet: p99 turn latency against worker processes", "p99 turn latency (ms)",
		func(x row) float64 { return float64(x.res.P99.Microseconds()) / 1000 }, nil)
}

func (r *report) plotOne(path, title, ylabel string, y func(row) float64, ceiling func(sessions int) float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "worker processes"
	p.Y.Label.Text = ylabel
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	type key struct {
		backend  string
		sessions int
	}
	var order []key
	series := map[key]plotter.XYs{}
	maxSessions := 0
	var sessionCounts []int
	for _, x := range r.rows {
		if x.res == nil {
			continue
		}
		k := key{x.backend, x.sessions}
		if _, ok := series[k]; !ok {
			order = append(order, k)
		}
		series[k] = append(series[k], plotter.XY{X: float64(x.processes), Y: y(x)})
		maxSessions = max(maxSessions, x.sessions)
		if !slices.Contains(sessionCounts, x.sessions) {
			sessionCounts = append(sessionCounts, x.sessions)
		}
	}
	if len(order) == 0 {
		return nil
	}
	top := 0.0
	for _, k := range order {
		line, points, err := plotter.NewLinePoints(series[k])
		if err != nil {
			return fmt.Errorf("plot %v: %w", k, err)
		}
		c, ok := backendColors[k.backend]
		if !ok {
			c = color.Black
		}
		line.Color, line.Width = c, vg.Points(2)
		if k.sessions != maxSessions {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		}
		points.Color, points.Shape = c, draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(fmt.Sprintf("%s, %d sessions", k.backend, k.sessions), line, points)
		for _, pt := range series[k] {
			top = max(top, pt.Y)
		}
	}
	if ceiling != nil {
		// The most the sessions could do with free stores: each turn
		// takes at least one model latency.
		for _, m := range sessionCounts {
			c := ceiling(m)
			if c > top*1.5 {
				continue
			}
			line, err := plotter.NewLine(plotter.XYs{{X: 1, Y: c}, {X: 4, Y: c}})
			if err != nil {
				return err
			}
			line.Color, line.Dashes = color.Black, []vg.Length{vg.Points(1), vg.Points(3)}
			p.Add(line)
			p.Legend.Add(fmt.Sprintf("ceiling for %d sessions (sessions ÷ model latency)", m), line)
			top = max(top, c)
		}
	}
	p.Y.Min, p.Y.Max = 0, top*1.6 // headroom for the legend
	if err := p.Save(9*vg.Inch, 5.5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}
