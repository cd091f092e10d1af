package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// growthConfig is what -growth runs.
type growthConfig struct {
	backends []string
	turns    int   // of the long run; 0: none
	sizes    []int // of the conversation; none: no conversation
	messages int   // measured at each size
	conv     scenario.ConversationOptions
}

// growthReport holds the results of the growth scenarios.
type growthReport struct {
	env   machine
	cfg   growthConfig
	long  []scenario.LongRun
	conv  []scenario.Message
	fails []string
}

// runGrowth runs the long run and the conversation on each backend with
// each chain, and writes OUT/table.md, OUT/growth.csv and OUT/growth.png.
func runGrowth(ctx context.Context, cfg growthConfig, out string, stdout, progress io.Writer) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	rep := &growthReport{env: describeMachine(ctx), cfg: cfg}
	start := time.Now()
	for _, be := range cfg.backends {
		for _, chain := range scenario.GrowthChains() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if cfg.turns > 0 {
				fmt.Fprintf(progress, "long run/%s/%s: %d tool turns ... ", be, chain, cfg.turns)
				r, err := scenario.RunLong(ctx, be, chain, cfg.turns)
				if err != nil {
					fmt.Fprintln(progress, "FAILED:", err)
					rep.fails = append(rep.fails, fmt.Sprintf("long run on %s with %s: %v", be, chain, firstLine(err.Error())))
				} else {
					fmt.Fprintf(progress, "median turn: first %s, last %s (%.2f×), %s in all\n",
						r.First.Round(time.Microsecond), r.Last.Round(time.Microsecond), r.Ratio(), r.Total.Round(time.Millisecond))
					rep.long = append(rep.long, r)
				}
			}
			if len(cfg.sizes) > 0 {
				ms, err := scenario.Conversation(ctx, be, chain, cfg.sizes, cfg.messages, cfg.conv, progress)
				rep.conv = append(rep.conv, ms...)
				if err != nil {
					fmt.Fprintln(progress, "conversation FAILED:", err)
					rep.fails = append(rep.fails, fmt.Sprintf("conversation on %s with %s: %v", be, chain, firstLine(err.Error())))
				}
			}
		}
	}
	fmt.Fprintf(progress, "done in %s\n\n", time.Since(start).Round(time.Second))
	table := rep.markdown()
	if _, err := io.WriteString(stdout, table); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "table.md"), []byte(table), 0o644); err != nil {
		return err
	}
	if err := rep.writeCSV(filepath.Join(out, "growth.csv")); err != nil {
		return err
	}
	return rep.plot(filepath.Join(out, "growth.png"))
}

// message returns the conversation's figures for backend, chain and size.
func (r *growthReport) message(backend, chain string, size int) (scenario.Message, bool) {
	for _, m := range r.conv {
		if m.Backend == backend && m.Chain == chain && m.History == size {
			return m, true
		}
	}
	return scenario.Message{}, false
}

func (r *growthReport) markdown() string {
	var b strings.Builder
	e := r.env
	fmt.Fprintf(&b, "Run of %s on %s (%d cores%s), %s. Each scenario ran once.\n", e.date, e.cpu, e.cores, e.loadNote(), e.goVersion)
	for _, f := range r.fails {
		fmt.Fprintf(&b, "Failed: %s.\n", f)
	}
	if len(r.long) > 0 {
		fmt.Fprintf(&b, "\n#### One long run of tool turns on an empty session: a turn among the first and the last %d turns (median; mean in brackets)\n\n", scenario.LongRunWindow)
		b.WriteString("| backend | chain | turns | first turns | last turns | last ÷ first | whole run |\n|---|---|--:|--:|--:|--:|--:|\n")
		for _, x := range r.long {
			fmt.Fprintf(&b, "| %s | %s | %d | %s (%s) | %s (%s) | %.2f× (%.2f×) | %s |\n", x.Backend, x.Chain, x.Turns,
				formatNs(float64(x.First)), formatNs(float64(x.FirstMean)), formatNs(float64(x.Last)), formatNs(float64(x.LastMean)),
				x.Ratio(), float64(x.LastMean)/float64(x.FirstMean), x.Total.Round(time.Millisecond))
		}
	}
	if len(r.conv) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "\n#### A conversation: one short run per message (the user's message, one tool call, a reply) at h items of history; per message (%d messages at each h; time: the median; %s)\n\n", r.cfg.messages, r.cfg.convText())
	b.WriteString("| backend | chain | h | time | B written | B stored (growth per message) | B stored in all | items decoded | B sent to the model | model calls | B per call (mean) | B per call (max) |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, m := range r.conv {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %d | %s | %d |\n", m.Backend, m.Chain, m.History,
			formatNs(float64(m.Time)), formatNum(m.Written), formatNum(m.StoredGrowth), strconv.FormatInt(m.Stored, 10),
			formatNum(m.Decoded), formatNum(m.ModelBytes), m.Calls, formatNum(m.CallBytes), m.MaxCallBytes)
	}
	// The ratios: the largest size measured against the smallest, and the
	// crash-safe chain's storage against persistence alone's.
	lo := r.cfg.sizes[0]
	fmt.Fprintf(&b, "\n#### Growth: a message at the largest h measured ÷ a message at h = %d; bytes stored ÷ persistence alone's on the same backend\n\n", lo)
	b.WriteString("| backend | chain | largest h | time | B written | items decoded | B sent to the model | B per call | stored growth per message ÷ persistence alone's | ÷ persistence alone's B written per message | B stored in all ÷ persistence alone's |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, be := range r.cfg.backends {
		for _, chain := range scenario.GrowthChains() {
			a, ok := r.message(be, chain, lo)
			if !ok {
				continue
			}
			var z scenario.Message
			for _, s := range r.cfg.sizes {
				if m, ok := r.message(be, chain, s); ok {
					z = m
				}
			}
			// A page-granular store may not grow at all over a few
			// messages of persistence alone (n/a then); what those
			// messages wrote, their items, is the steady figure.
			storedGrowth, perWritten, stored := "base", "base", "base"
			if chain != scenario.GrowthChains()[0] {
				storedGrowth, perWritten, stored = "n/a", "n/a", "n/a"
				if p, ok := r.message(be, scenario.GrowthChains()[0], z.History); ok {
					storedGrowth = ratioOrNA(z.StoredGrowth, p.StoredGrowth)
					perWritten = ratioOrNA(z.StoredGrowth, p.Written)
					stored = ratioOrNA(float64(z.Stored), float64(p.Stored))
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", be, chain, z.History,
				ratioOrNA(float64(z.Time), float64(a.Time)), ratioOrNA(z.Written, a.Written),
				ratioOrNA(z.Decoded, a.Decoded), ratioOrNA(z.ModelBytes, a.ModelBytes), ratioOrNA(z.CallBytes, a.CallBytes), storedGrowth, perWritten, stored)
		}
	}
	return b.String()
}

func (r *growthReport) writeCSV(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"scenario", "backend", "chain", "history_or_turns", "messages", "ns", "first_median_ns", "last_median_ns", "first_mean_ns", "last_mean_ns", "bytes_written", "stored_growth", "bytes_stored", "items_decoded", "model_bytes", "model_calls", "call_bytes_mean", "call_bytes_max"})
	i := strconv.Itoa
	fl := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	for _, x := range r.long {
		_ = w.Write([]string{"longrun", x.Backend, x.Chain, i(x.Turns), "", i(int(x.Total)), i(int(x.First)), i(int(x.Last)),
			i(int(x.FirstMean)), i(int(x.LastMean)), "", "", "", "", "", "", "", ""})
	}
	for _, m := range r.conv {
		_ = w.Write([]string{"conversation", m.Backend, m.Chain, i(m.History), i(m.Messages), i(int(m.Time)), "", "", "", "",
			fl(m.Written), fl(m.StoredGrowth), strconv.FormatInt(m.Stored, 10), fl(m.Decoded), fl(m.ModelBytes),
			i(m.Calls), fl(m.CallBytes), strconv.FormatInt(m.MaxCallBytes, 10)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// plot draws the time of a message against the history size on each
// backend, with the crash-safe chain (solid) and persistence alone
// (dashed), both axes logarithmic: flat lines are O(new items) per
// message.
func (r *growthReport) plot(path string) error {
	p := plot.New()
	p.Title.Text = "A message of a conversation against its history (solid: with checkpoints, dashed: persistence alone)"
	p.X.Label.Text = "items of history"
	p.Y.Label.Text = "time per message (ns)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	drawn, top := 0, 0.0
	for i, be := range r.cfg.backends {
		for _, chain := range []string{"checkpoint", "persistence"} {
			var pts plotter.XYs
			for _, s := range r.cfg.sizes {
				if m, ok := r.message(be, chain, s); ok && m.Time > 0 {
					pts = append(pts, plotter.XY{X: float64(s), Y: float64(m.Time)})
					top = max(top, float64(m.Time))
				}
			}
			if len(pts) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return fmt.Errorf("plot %s %s: %w", be, chain, err)
			}
			c := seriesColors[(i+1)%len(seriesColors)]
			line.Color, line.Width = c, vg.Points(2)
			if chain == "persistence" {
				line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
			}
			points.Color, points.Shape = c, draw.CircleGlyph{}
			p.Add(line, points)
			p.Legend.Add(be+" "+chain, line, points)
			drawn++
		}
	}
	if drawn == 0 {
		return nil
	}
	p.Y.Max = top * 20 // headroom for the legend
	if err := p.Save(9*vg.Inch, 5.5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// convText says how the conversation's chain was configured.
func (c growthConfig) convText() string {
	view := "the model's view: the whole session"
	if c.conv.View > 0 {
		view = fmt.Sprintf("the model's view: the last %d items (persistence.WithLimit)", c.conv.View)
	}
	if c.conv.ByReference {
		view += "; checkpoints refer to the history (the default)"
	} else {
		view += "; checkpoints copy the history (persistence.WithHistoryCopied)"
	}
	switch {
	case c.conv.Chain:
		view += "; the Responses adapter over an in-process fake API, responses chained across runs (openai.ChainResponses, persistence.WithContinuation): B sent are request bodies"
	case c.conv.OpenAI:
		view += "; the Responses adapter over an in-process fake API: B sent are request bodies"
	}
	if c.conv.Compact > 0 {
		view += fmt.Sprintf("; the view compacted at %d estimated tokens (compaction.Summarize, persistence.WithContinuation)", c.conv.Compact)
	}
	if c.conv.Chain || c.conv.Compact > 0 {
		view += "; at each h one message, not measured, first reads the history grown behind the session's marks"
	}
	switch {
	case c.conv.DeleteFinished:
		return view + "; checkpoints of finished runs deleted (checkpoint.DeleteFinished)"
	case c.conv.KeepLast > 0:
		return view + fmt.Sprintf("; the last %d finished runs' checkpoints of the session kept (checkpoint.KeepLast)", c.conv.KeepLast)
	case c.conv.KeepFor > 0:
		return view + fmt.Sprintf("; finished runs' checkpoints kept for %s, one message per %s (checkpoint.KeepFor)", c.conv.KeepFor, scenario.MessageEvery)
	}
	return view + "; every checkpoint kept (checkpoint.KeepAll)"
}
