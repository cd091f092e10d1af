package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

var seriesColors = []color.Color{
	color.RGBA{0x88, 0x88, 0x88, 0xff}, // bare loop
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // turnkit
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, // turnkit + chain
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, // eino ReAct
	color.RGBA{0x94, 0x67, 0xbd, 0xff}, // eino ADK
	color.RGBA{0x8c, 0x56, 0x4b, 0xff}, // Genkit
	color.RGBA{0x17, 0xbe, 0xcf, 0xff}, // langchaingo
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, // JS
}

// plot draws the per-turn cost of each run series against the run length,
// both axes logarithmic.
func (r *report) plot(path string) error {
	p := plot.New()
	p.Title.Text = "Cost per turn against run length (N tool turns, then a final message)"
	p.X.Label.Text = "turns per run"
	p.Y.Label.Text = "time per turn (ns)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	drawn, top := 0, 0.0
	for i, s := range peerSeries {
		var pts plotter.XYs
		for _, n := range scenario.RunLengths() {
			if x, ok := r.get(fmt.Sprintf("run/%s/turns=%d", s.key, n)); ok && x.ns > 0 {
				pts = append(pts, plotter.XY{X: float64(n), Y: x.ns})
				top = max(top, x.ns)
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.label, err)
		}
		c := seriesColors[i%len(seriesColors)]
		line.Color, line.Width = c, vg.Points(2)
		points.Color, points.Shape = c, draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(s.label, line, points)
		drawn++
	}
	if drawn == 0 {
		return nil // no run scenario ran (-run filtered them out): no plot
	}
	p.Y.Max = top * 40 // headroom for the legend above the highest line
	if err := p.Save(9*vg.Inch, 5.5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// plotCrashSafe draws the per-turn cost of the crash-safe chain and of
// persistence alone on each backend against the history size, both axes
// logarithmic: flat lines are invariant 14.
func (r *report) plotCrashSafe(path string) error {
	p := plot.New()
	p.Title.Text = "Crash-safe chain per turn against history (solid: with checkpoints, dashed: persistence alone)"
	p.X.Label.Text = "items of history"
	p.Y.Label.Text = "time per turn (ns)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	drawn, top := 0, 0.0
	histories := scenario.Histories()
	for i, be := range scenario.BackendNames() {
		for _, kind := range []string{"checkpoint", "persistence"} {
			var pts plotter.XYs
			for _, h := range histories {
				if x, ok := r.get(fmt.Sprintf("crashsafe/%s/%s/history=%d", be, kind, h)); ok && x.ns > 0 {
					pts = append(pts, plotter.XY{X: float64(h), Y: x.ns})
					top = max(top, x.ns)
				}
			}
			if len(pts) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return fmt.Errorf("plot %s %s: %w", be, kind, err)
			}
			c := seriesColors[(i+1)%len(seriesColors)]
			line.Color, line.Width = c, vg.Points(2)
			if kind == "persistence" {
				line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
			}
			points.Color, points.Shape = c, draw.CircleGlyph{}
			p.Add(line, points)
			p.Legend.Add(be+" "+kind, line, points)
			drawn++
		}
	}
	if drawn == 0 {
		return nil // no crash-safe scenario ran
	}
	p.Y.Max = top * 20 // headroom for the legend
	if err := p.Save(9*vg.Inch, 5.5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}
