package main

import (
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// A row is one figure of the table: a scenario's cost per unit (turn,
// item, commit), or why it has none.
type row struct {
	scenario  scenario.Scenario
	n         int     // iterations run
	ns        float64 // per unit
	allocs    float64 // per unit, when hasAllocs
	bytes     float64 // per unit, when hasAllocs
	hasAllocs bool
	skip      string
	note      string  // custom metrics the scenario reported, such as a checkpoint's size
	cpu       float64 // the process's CPU time per unit in ns, when hasCPU (scenario.CPUMetric)
	hasCPU    bool
	share     float64 // an adapter row's own share measured inside its benchmark, per call paired (own-%), when hasShare
	hasShare  bool
	// pairedSame is a store's time ÷ the raw driver's same writes', the
	// two timed one after the other in each iteration (a session store's
	// BenchmarkAppendPaired, a crash-safe turn interleaved with the
	// driver's), when > 0.
	pairedSame float64
}

// fromResult returns the row of scenario s's result. A scenario whose
// turns were interleaved with a raw driver's (scenario.PairedMetrics)
// has its own time per turn as its time, and the ratio as pairedSame;
// its allocations are the two's.
func fromResult(s scenario.Scenario, res testing.BenchmarkResult) row {
	per := float64(res.N) * float64(s.PerOp)
	own, same, ratio := scenario.PairedMetrics()
	var notes []string
	for _, k := range slices.Sorted(maps.Keys(res.Extra)) {
		if k != scenario.CPUMetric() && k != own && k != same && k != ratio {
			notes = append(notes, formatNum(res.Extra[k])+" "+k)
		}
	}
	// The CPU metric is per turn, as PerOp 1 scenarios report it.
	cpu, hasCPU := res.Extra[scenario.CPUMetric()]
	x := row{
		scenario: s, n: res.N, hasAllocs: true,
		ns:     float64(res.T.Nanoseconds()) / per,
		allocs: float64(res.MemAllocs) / per,
		bytes:  float64(res.MemBytes) / per,
		note:   strings.Join(notes, ", "),
		cpu:    cpu, hasCPU: hasCPU,
	}
	if q, ok := res.Extra[ratio]; ok && q > 0 {
		x.ns, x.pairedSame = res.Extra[own], q
	}
	return x
}

// A report collects the rows of one run.
type report struct {
	env     machine
	rows    []row
	byName  map[string]int
	rounds  map[string][]row // every round's measured row of each scenario, in order
	missing []string         // peers that could not run, with why
	prev    *previous        // the table this run replaces, when it keeps its history
}

func (r *report) add(x row) {
	if r.byName == nil {
		r.byName = map[string]int{}
	}
	r.byName[x.scenario.Name] = len(r.rows)
	r.rows = append(r.rows, x)
}

// keepFastest adds x, or replaces the row of the same name if x is faster:
// of several rounds on a shared machine, the fastest is the least disturbed.
func (r *report) keepFastest(x row) {
	if x.skip == "" {
		if r.rounds == nil {
			r.rounds = map[string][]row{}
		}
		r.rounds[x.scenario.Name] = append(r.rounds[x.scenario.Name], x)
	}
	if i, ok := r.byName[x.scenario.Name]; ok {
		if old := r.rows[i]; old.skip == "" && (x.skip != "" || old.ns <= x.ns) {
			return
		}
		r.rows[i] = x
		return
	}
	r.add(x)
}

// get returns the measured row named name.
func (r *report) get(name string) (row, bool) {
	i, ok := r.byName[name]
	if !ok || r.rows[i].skip != "" {
		return row{}, false
	}
	return r.rows[i], true
}

// ratio returns x's time over its baseline's, if both ran: for a Paired
// scenario the median over the rounds of the two's ratio in each round
// (pairedRatio), else the fastest round's over the baseline's fastest.
func (r *report) ratio(x row) (float64, bool) {
	if x.scenario.Own != "" {
		return r.ownShare(x)
	}
	if x.scenario.Paired {
		return r.pairedRatio(x, func(y row) (float64, bool) { return y.ns, true })
	}
	return r.ratioTo(x, x.scenario.Baseline)
}

// cpuRatio returns x's CPU time per unit over its baseline's, if both
// reported one: paired as ratio pairs times.
func (r *report) cpuRatio(x row) (float64, bool) {
	cpu := func(y row) (float64, bool) { return y.cpu, y.hasCPU }
	if x.scenario.Paired {
		return r.pairedRatio(x, cpu)
	}
	base, ok := r.get(x.scenario.Baseline)
	if x.skip != "" || x.scenario.Baseline == "" || !ok || !x.hasCPU || !base.hasCPU || base.cpu == 0 {
		return 0, false
	}
	return x.cpu / base.cpu, true
}

// medianCPU returns the median of the CPU time per unit of x's rounds
// that reported one (x's own when none is recorded); the mean of the
// middle two of an even count.
func (r *report) medianCPU(x row) float64 {
	var cs []float64
	for _, y := range r.rounds[x.scenario.Name] {
		if y.hasCPU {
			cs = append(cs, y.cpu)
		}
	}
	if len(cs) == 0 {
		return x.cpu
	}
	return median(cs)
}

// median returns the median of vs, which it sorts; the mean of the
// middle two of an even count. vs must not be empty.
func median(vs []float64) float64 {
	slices.Sort(vs)
	m := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[m]
	}
	return (vs[m-1] + vs[m]) / 2
}

// pairedRatio returns the median, over the rounds both x's scenario and
// its baseline ran, of the figure fig of x's round over the baseline's
// same round (the first rounds of each, when one ran more), if there is
// one; the mean of the middle two of an even count.
func (r *report) pairedRatio(x row, fig func(row) (float64, bool)) (float64, bool) {
	if x.skip != "" || x.scenario.Baseline == "" {
		return 0, false
	}
	xs, bs := r.rounds[x.scenario.Name], r.rounds[x.scenario.Baseline]
	var qs []float64
	for i := range min(len(xs), len(bs)) {
		a, okA := fig(xs[i])
		b, okB := fig(bs[i])
		if okA && okB && b != 0 {
			qs = append(qs, a/b)
		}
	}
	if len(qs) == 0 {
		return 0, false
	}
	return median(qs), true
}

// ownShare returns, for a scenario with an Own part, the median over the
// rounds that x, its Own and its baseline all ran of (x − Own) ÷ baseline
// in that round: its own cost as a share of the baseline's.
func (r *report) ownShare(x row) (float64, bool) {
	if x.skip != "" || x.scenario.Baseline == "" {
		return 0, false
	}
	xs, os, bs := r.rounds[x.scenario.Name], r.rounds[x.scenario.Own], r.rounds[x.scenario.Baseline]
	var qs []float64
	for i := range min(len(xs), len(os), len(bs)) {
		if bs[i].ns != 0 {
			qs = append(qs, (xs[i].ns-os[i].ns)/bs[i].ns)
		}
	}
	if len(qs) == 0 {
		return 0, false
	}
	return median(qs), true
}

// medianShare returns the median of the own shares x's rounds measured
// inside their benchmark (row.share), if any did.
func (r *report) medianShare(x row) (float64, bool) {
	var vs []float64
	for _, y := range r.rounds[x.scenario.Name] {
		if y.hasShare {
			vs = append(vs, y.share)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// noteOf is the note the table gives x after its name: the metrics its
// scenario reported and, when it reported its CPU time, that time per
// unit (the median of its rounds': the fastest round by wall time need
// not be the one of least work) and its ratio to the baseline's.
func (r *report) noteOf(x row) string {
	notes := x.note
	if q, ok := r.medianShare(x); ok {
		share := fmt.Sprintf("per call %.1f%%", 100*q)
		if notes == "" {
			notes = share
		} else {
			notes += ", " + share
		}
	}
	if !x.hasCPU {
		return notes
	}
	cpu := "CPU " + formatNs(r.medianCPU(x)) + "/" + x.scenario.Unit
	if q, ok := r.cpuRatio(x); ok {
		cpu += fmt.Sprintf(" %.2f×", q)
	}
	if notes == "" {
		return cpu
	}
	return notes + ", " + cpu
}

// A rawColumn is a column of ratios to a second baseline that rows name
// beside their first (Scenario.Raw, Scenario.Same).
type rawColumn struct {
	title string
	of    func(scenario.Scenario) string
	ratio func(*report, row) (float64, bool)
}

// rawColumns are the columns of ratios to raw drivers, in the table's
// order: the driver doing the turn's durable writes into tables of its
// own, then the driver doing exactly the store's writes.
var rawColumns = []rawColumn{
	{"÷ raw driver", func(s scenario.Scenario) string { return s.Raw }, (*report).rawRatio},
	{"÷ same writes", func(s scenario.Scenario) string { return s.Same }, (*report).sameRatio},
}

// rawRatio returns x's time over its raw driver's (Scenario.Raw), if both
// ran.
func (r *report) rawRatio(x row) (float64, bool) { return r.ratioTo(x, x.scenario.Raw) }

// sameRatio returns x's time over the driver doing the store's own writes
// (Scenario.Same), if both ran: the median over x's rounds of the ratio
// measured with the two interleaved (row.pairedSame), where x's rounds
// have one, else the ratio of the two's fastest rounds.
func (r *report) sameRatio(x row) (float64, bool) {
	var qs []float64
	for _, y := range r.rounds[x.scenario.Name] {
		if y.pairedSame > 0 {
			qs = append(qs, y.pairedSame)
		}
	}
	if x.skip == "" && x.scenario.Same != "" && len(qs) > 0 {
		return median(qs), true
	}
	return r.ratioTo(x, x.scenario.Same)
}

func (r *report) ratioTo(x row, baseline string) (float64, bool) {
	if x.skip != "" || baseline == "" {
		return 0, false
	}
	base, ok := r.get(baseline)
	if !ok || base.ns == 0 {
		return 0, false
	}
	return x.ns / base.ns, true
}

// rawCell is x's cell of column c of ratios to a raw driver, whose rows
// are bases: the ratio, "base" for a row others are divided by, "n/a"
// for a ratio whose rows did not both run, and empty for a row with
// neither.
func (r *report) rawCell(x row, c rawColumn, bases map[string]bool) string {
	baseline := c.of(x.scenario)
	switch {
	case bases[x.scenario.Name]:
		return "base"
	case baseline == "" || x.skip != "":
		return ""
	}
	if q, ok := c.ratio(r, x); ok {
		return fmt.Sprintf("%.2f×", q)
	}
	return "n/a"
}

var groupTitles = map[string]string{
	"turn":       "Per turn, one turn per iteration, at h items of history (ratio: to the bare loop at the same h)",
	"run":        "Whole runs of N tool turns and a final message, per turn (ratio: to the bare loop at the same N)",
	"middleware": "Per turn with middleware, history of 10 items (ratio: to the bare loop)",
	"policies":   "Per turn of the default chain with issue 30's policies configured but not triggered (retry middleware, a tool timeout, a token and cost budget, a conditional tool), at h items of history (ratio: to the chain without them at the same h)",
	"checkpoint": "Checkpoints: state.Marshal and state.Unmarshal of a run of N items, per checkpoint (ratio: to encoding/json of the items' JSON alone)",
	"approval":   "The approval cycle: interrupt → marshal → unmarshal → approve → resume (ratio: to the same two turns with nothing gated)",
	"session":    "Session commits: each backend's own BenchmarkAppend, one append of three items per commit (ratio: to the raw driver doing the same inserts)",
	"sealed":     "Encryption at rest: a crash-safe turn on SQLite with session/encrypt on (items and checkpoints sealed), each right after the same turn without it, history of h items, the database on disk and then in memory (-tmpfs: a tmpfs file, no disk under the writes and syncs); CPU: the process's CPU time per turn (ratio: the median over the rounds of each round's time ÷ the same turn's without encryption in that round; the CPU ratio likewise)",
	"mcp":        "An MCP tool call, per call: the echo tool as a plain function tool (tool.Func), served by a go-sdk server in the same process over the in-memory transport, and the MCP reference server's echo run by node over stdio (ratio: to the function tool)",
	"adapter":    "Model adapters' own cost per call: the SDK's typed call (what a program using the provider's SDK alone pays), the client call the adapter makes alone (sdk), and the adapter's Respond, back to back in each round of BenchmarkAdapterShare on the same recorded payload over an in-memory transport; ns: the median over its rounds (ratio: the adapter's own share, (adapter − sdk) ÷ sdk-typed, the median over turnbench's rounds of each round's; per call: the median over the rounds of BenchmarkAdapterShare's own-%, each round one call of each)",
	"crashsafe":  "The crash-safe chain per turn (persistence over the checkpointer's session, then the checkpointer) on each backend, history of h items read from the session (ratio: to persistence alone on the same backend and h)",
}

var groupOrder = []string{"turn", "middleware", "policies", "run", "checkpoint", "approval", "session", "crashsafe", "sealed", "mcp", "adapter"}

// anyPaired reports whether a measured row is of a Paired scenario.
func (r *report) anyPaired() bool {
	for _, x := range r.rows {
		if x.scenario.Paired && x.skip == "" {
			return true
		}
	}
	return false
}

// markdown renders the whole report.
func (r *report) markdown() string {
	var b strings.Builder
	e := r.env
	fmt.Fprintf(&b, "Run of %s on %s (%d cores%s), %s, %s.\n", e.date, e.cpu, e.cores, e.loadNote(), e.goVersion, e.nodeVersion)
	if len(e.peers) > 0 {
		fmt.Fprintf(&b, "Peers: %s.\n", strings.Join(e.peers, ", "))
	}
	for _, m := range r.missing {
		fmt.Fprintf(&b, "Missing peer: %s.\n", m)
	}
	fmt.Fprintf(&b, "Each scenario ran %d round(s) of -benchtime %s, interleaved; the fastest round counts. Figures are one run's: compare ratios, not absolute times.\n", e.rounds, e.benchtime)
	if r.anyPaired() {
		b.WriteString("The encryption and adapter rows' ratios are medians over the rounds of each round's pair, and the encryption rows' CPU times the medians of their rounds'.\n")
	}
	if r.prev != nil {
		fmt.Fprintf(&b, "The column before holds the figures of the table this one replaced (%s) for the rows whose ratio or allocations moved by more than %.0f%%.\n", r.prev.run, moved*100)
	}
	for _, g := range groupOrder {
		var rows []row
		for _, x := range r.rows {
			if x.scenario.Group == g {
				rows = append(rows, x)
			}
		}
		if len(rows) == 0 {
			continue
		}
		title := groupTitles[g]
		if title == "" {
			title = g
		}
		fmt.Fprintf(&b, "\n#### %s\n\n", title)
		// A group whose rows name a raw driver has a column of ratios to
		// it, after the ratio to the baseline, one for each kind of raw
		// driver they name.
		head, rule := "| scenario | ns/unit | allocs/unit | B/unit | ratio |", "|---|--:|--:|--:|--:|"
		var cols []rawColumn
		var bases []map[string]bool
		for _, c := range rawColumns {
			named := map[string]bool{}
			for _, x := range rows {
				if b := c.of(x.scenario); b != "" {
					named[b] = true
				}
			}
			if len(named) > 0 {
				cols, bases = append(cols, c), append(bases, named)
				head, rule = head+" "+c.title+" |", rule+"--:|"
			}
		}
		if r.prev != nil {
			head, rule = head+" before |", rule+"--:|"
		}
		b.WriteString(head + "\n" + rule + "\n")
		for _, x := range rows {
			name := strings.TrimPrefix(x.scenario.Name, g+"/")
			if note := r.noteOf(x); note != "" {
				name += " (" + note + ")"
			}
			rawCell := ""
			for i, c := range cols {
				rawCell += " " + r.rawCell(x, c, bases[i]) + " |"
			}
			if x.skip != "" {
				fmt.Fprintf(&b, "| %s | skipped: %s | | | |%s%s\n", name, x.skip, rawCell, r.beforeCell(x))
				continue
			}
			ratio := "base"
			if q, ok := r.ratio(x); ok && x.scenario.Own != "" {
				ratio = fmt.Sprintf("%.1f%%", 100*q)
			} else if ok {
				ratio = fmt.Sprintf("%.2f×", q)
			} else if x.scenario.Baseline != "" {
				ratio = "n/a"
			}
			allocs, bytes := "n/a", "n/a"
			if x.hasAllocs {
				allocs, bytes = formatNum(x.allocs), formatNum(x.bytes)
			}
			fmt.Fprintf(&b, "| %s | %s/%s | %s | %s | %s |%s%s\n", name, formatNs(x.ns), x.scenario.Unit, allocs, bytes, ratio, rawCell, r.beforeCell(x))
		}
	}
	b.WriteString(r.flatness())
	b.WriteString(r.peers())
	return b.String()
}

// flatness compares each turn scenario at 10 000 items of history with the
// same scenario at 10: the core's promise is within 1.2×.
func (r *report) flatness() string {
	hs := scenario.Histories()
	lo, hi := hs[0], hs[len(hs)-1]
	var b strings.Builder
	for _, x := range r.rows {
		if !strings.HasSuffix(x.scenario.Name, "/history="+strconv.Itoa(lo)) {
			continue
		}
		stem := strings.TrimSuffix(x.scenario.Name, strconv.Itoa(lo))
		a, okA := r.get(x.scenario.Name)
		z, okZ := r.get(stem + strconv.Itoa(hi))
		if !okA || !okZ {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "\n#### Flat with history: cost per turn at %d items ÷ at %d items\n\n| scenario | time | allocs |\n|---|--:|--:|\n", hi, lo)
		}
		fmt.Fprintf(&b, "| %s | %.2f× | %s |\n", strings.TrimSuffix(stem, "/history="),
			z.ns/a.ns, ratioOrNA(z.allocs, a.allocs))
	}
	return b.String()
}

// peerSeries are the run-scenario series of the plot and the peer table,
// in order: turnkit's first, then the peers (those with a short name, used
// in the "turnkit against its peers" table).
var peerSeries = []struct{ key, label, short string }{
	{"bare", "bare loop", ""},
	{"runner", "turnkit Runner", ""},
	{"runner+chain", "turnkit + default chain", ""},
	{"eino", "eino ReAct agent", "eino ReAct"},
	{"eino-adk", "eino ADK agent", "eino ADK"},
	{"genkit", "Genkit (Go)", "Genkit"},
	{"langchaingo", "langchaingo executor", "langchaingo"},
	{"openai-agents-js", "@openai/agents (JS)", "@openai/agents (JS)"},
}

// peers renders turnkit against each peer at each run length.
func (r *report) peers() string {
	var b strings.Builder
	head := false
	for _, n := range scenario.RunLengths() {
		tk, ok := r.get(fmt.Sprintf("run/runner/turns=%d", n))
		if !ok {
			continue
		}
		for _, p := range peerSeries {
			x, ok := r.get(fmt.Sprintf("run/%s/turns=%d", p.key, n))
			if p.short == "" || !ok {
				continue
			}
			if !head {
				b.WriteString("\n#### turnkit against its peers (same scenario, per turn; ratio: the peer's time ÷ turnkit's)\n\n| turns | turnkit | peer | peer's time | ratio |\n|--:|--:|---|--:|--:|\n")
				head = true
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %.1f× |\n", n, formatNs(tk.ns), p.short, formatNs(x.ns), x.ns/tk.ns)
		}
	}
	return b.String()
}

func ratioOrNA(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// writeCSV writes every row.
func (r *report) writeCSV(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"scenario", "group", "unit", "per_op", "iterations", "ns_per_unit", "allocs_per_unit", "bytes_per_unit", "baseline", "ratio_to_baseline", "skipped", "notes", "raw", "ratio_to_raw", "cpu_ns_per_unit", "cpu_ratio_to_baseline", "same", "ratio_to_same"})
	for _, x := range r.rows {
		s := x.scenario
		rec := []string{s.Name, s.Group, s.Unit, strconv.Itoa(s.PerOp), "", "", "", "", s.Baseline, "", x.skip, x.note, s.Raw, "", "", "", s.Same, ""}
		if x.skip == "" {
			rec[4] = strconv.Itoa(x.n)
			rec[5] = strconv.FormatFloat(x.ns, 'f', 1, 64)
			if x.hasAllocs {
				rec[6] = strconv.FormatFloat(x.allocs, 'f', 2, 64)
				rec[7] = strconv.FormatFloat(x.bytes, 'f', 1, 64)
			}
			if q, ok := r.ratio(x); ok {
				rec[9] = strconv.FormatFloat(q, 'f', 3, 64)
			}
			if q, ok := r.rawRatio(x); ok {
				rec[13] = strconv.FormatFloat(q, 'f', 3, 64)
			}
			if q, ok := r.sameRatio(x); ok {
				rec[17] = strconv.FormatFloat(q, 'f', 3, 64)
			}
			if x.hasCPU {
				rec[14] = strconv.FormatFloat(r.medianCPU(x), 'f', 1, 64)
			}
			if q, ok := r.cpuRatio(x); ok {
				rec[15] = strconv.FormatFloat(q, 'f', 3, 64)
			}
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// formatNs prints a duration in ns with a unit that keeps three digits.
func formatNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e4:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// formatNum prints a count per unit.
func formatNum(v float64) string {
	switch {
	case v >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
