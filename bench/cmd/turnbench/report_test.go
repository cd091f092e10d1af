package main

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

func newScenario(name, group, baseline string, perOp int) scenario.Scenario {
	return scenario.Scenario{Name: name, Group: group, Baseline: baseline, PerOp: perOp, Unit: "turn"}
}

func sampleReport() *report {
	r := &report{env: machine{date: "2026-01-02 03:04 UTC", cpu: "test cpu", cores: 2, goVersion: "go1.26", nodeVersion: "Node.js v20", benchtime: "1s", rounds: 3}}
	r.add(row{scenario: newScenario("turn/bare/history=10", "turn", "", 1), n: 10, ns: 1000, allocs: 10, bytes: 1000, hasAllocs: true})
	r.add(row{scenario: newScenario("turn/runner/history=10", "turn", "turn/bare/history=10", 1), n: 10, ns: 2500, allocs: 22, bytes: 3000, hasAllocs: true})
	r.add(row{scenario: newScenario("turn/bare/history=10000", "turn", "", 1), n: 10, ns: 1100, allocs: 10, bytes: 1000, hasAllocs: true})
	r.add(row{scenario: newScenario("turn/runner/history=10000", "turn", "turn/bare/history=10000", 1), n: 10, ns: 2750, allocs: 22, bytes: 3000, hasAllocs: true})
	r.add(row{scenario: newScenario("middleware/logging", "middleware", "turn/bare/history=10", 1), skip: "middleware/logging has not landed"})
	for _, n := range scenario.RunLengths() {
		r.add(row{scenario: newScenario(runName("bare", n), "run", "", n), n: 5, ns: 1000, allocs: 10, hasAllocs: true})
		r.add(row{scenario: newScenario(runName("runner", n), "run", runName("bare", n), n), n: 5, ns: 2000, allocs: 20, hasAllocs: true})
		r.add(row{scenario: newScenario(runName("eino", n), "run", runName("bare", n), n), n: 5, ns: 8000, allocs: 100, hasAllocs: true})
		r.add(row{scenario: newScenario(runName("eino-adk", n), "run", runName("bare", n), n), n: 5, ns: 30000, allocs: 200, hasAllocs: true})
		r.add(row{scenario: newScenario(runName("genkit", n), "run", runName("bare", n), n), n: 1, ns: float64(n) * 1e5, allocs: 5000, hasAllocs: true})
		r.add(row{scenario: newScenario(runName("langchaingo", n), "run", runName("bare", n), n), n: 5, ns: 2e5, allocs: 240, hasAllocs: true})
		r.add(row{scenario: newScenario(runName("openai-agents-js", n), "run", runName("bare", n), n), n: 5, ns: 2e6})
	}
	return r
}

func runName(who string, n int) string { return "run/" + who + "/turns=" + strconv.Itoa(n) }

func TestMarkdownRatios(t *testing.T) {
	md := sampleReport().markdown()
	for _, want := range []string{
		"| runner/history=10 | 2.50 µs/turn | 22 | 3000 | 2.50× |",
		"| bare/history=10 | 1.00 µs/turn | 10 | 1000 | base |",
		"| logging | skipped: middleware/logging has not landed | | | |",
		"| turn/runner | 1.10× | 1.00× |", // flat with history
		"| 100 | 2.00 µs | eino ReAct | 8.00 µs | 4.0× |",
		"| 100 | 2.00 µs | eino ADK | 30.0 µs | 15.0× |",
		"| 1000 | 2.00 µs | Genkit | 100.00 ms | 50000.0× |",
		"| 10 | 2.00 µs | langchaingo | 200.0 µs | 100.0× |",
		"| 1000 | 2.00 µs | @openai/agents (JS) | 2.00 ms | 1000.0× |",
		"| openai-agents-js/turns=10 | 2.00 ms/turn | n/a | n/a | 2000.00× |",
		"Run of 2026-01-02 03:04 UTC on test cpu (2 cores), go1.26, Node.js v20.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
}

func TestCSVAndPlot(t *testing.T) {
	r := sampleReport()
	dir := t.TempDir()
	csvPath, pngPath := filepath.Join(dir, "t.csv"), filepath.Join(dir, "t.png")
	recs := writeAndReadCSV(t, r, csvPath)
	if got, want := len(recs), 1+len(r.rows); got != want {
		t.Fatalf("the CSV has %d records, want a header and %d rows", got, len(r.rows))
	}
	if got := recs[2]; got[0] != "turn/runner/history=10" || got[5] != "2500.0" || got[9] != "2.500" {
		t.Errorf("runner row = %v, want its ns (2500.0) and ratio (2.500)", got)
	}
	if got := recs[5]; got[10] == "" || got[5] != "" {
		t.Errorf("skipped row = %v, want the reason and no figure", got)
	}
	if err := r.plot(pngPath); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Errorf("%s is not a PNG", pngPath)
	}
}

func TestMillis(t *testing.T) {
	for give, want := range map[string]int64{"1s": 1000, "250ms": 250, "100x": 1, "junk": 1} {
		if got := millis(give); got != want {
			t.Errorf("millis(%q) = %d, want %d", give, got, want)
		}
	}
}

func TestKeepFastest(t *testing.T) {
	r := &report{}
	s := newScenario("turn/runner/history=10", "turn", "", 1)
	r.keepFastest(row{scenario: s, n: 1, ns: 3000})
	r.keepFastest(row{scenario: s, n: 2, ns: 2000})
	r.keepFastest(row{scenario: s, n: 3, ns: 2500})
	if got, ok := r.get(s.Name); !ok || got.ns != 2000 || got.n != 2 || len(r.rows) != 1 {
		t.Errorf("after three rounds the row is %+v (%d rows), want the fastest round, 2000 ns", got, len(r.rows))
	}
}

func TestParseGoBench(t *testing.T) {
	store, raw, same := sessionScenarios("sqlite")
	out := `goos: linux
BenchmarkAppend/turnkit-2         	   33055	     35811 ns/op	    3280 B/op	      63 allocs/op
BenchmarkAppend/raw-2             	   37071	     32310 ns/op	    2346 B/op	      45 allocs/op
PASS
`
	rows := parseGoBench(strings.NewReader(out), "", store, raw, same)
	if len(rows) != 2 || rows[0].scenario.Name != raw.Name || rows[1].scenario.Name != store.Name {
		t.Fatalf("rows = %+v, want the raw driver then the store", rows)
	}
	if got := rows[1]; got.ns != 35811 || got.allocs != 63 || got.bytes != 3280 || got.n != 33055 || !got.hasAllocs || got.scenario.Same != "" {
		t.Errorf("store row = %+v, want its figures and no same-writes baseline", got)
	}
	rows = parseGoBench(strings.NewReader("--- SKIP: BenchmarkAppend\nPASS\n"), "no server", store, raw, same)
	if len(rows) != 2 || rows[0].skip != "no server" || rows[1].skip != "no server" || rows[1].scenario.Same != "" {
		t.Errorf("rows of a skipped benchmark = %+v, want both skipped with the reason", rows)
	}

	// A benchmark with the raw driver doing the store's writes.
	out = `BenchmarkAppend/turnkit-2         	    3000	    152507 ns/op	    4465 B/op	      65 allocs/op
BenchmarkAppend/raw-2             	    3000	     78000 ns/op	    2770 B/op	      26 allocs/op
BenchmarkAppend/raw-same-writes-2 	    3000	    119464 ns/op	    4007 B/op	      63 allocs/op
`
	rows = parseGoBench(strings.NewReader(out), "", store, raw, same)
	if len(rows) != 3 || rows[0].scenario.Name != raw.Name || rows[1].scenario.Name != same.Name || rows[2].scenario.Name != store.Name {
		t.Fatalf("rows = %+v, want the raw driver, the same writes, then the store", rows)
	}
	if got := rows[1]; got.ns != 119464 || got.allocs != 63 || got.scenario.Baseline != raw.Name {
		t.Errorf("same-writes row = %+v", got)
	}
	if got := rows[2]; got.ns != 152507 || got.scenario.Same != same.Name || got.pairedSame != 0 {
		t.Errorf("store row = %+v, want %s as its second baseline, and no interleaved ratio", got, same.Name)
	}

	// With BenchmarkAppendPaired's interleaved ratio, which the table's
	// column gives (the median over the rounds) instead of the ratio of the
	// fastest rounds.
	r := &report{env: machine{date: "2026-01-02 03:04 UTC", rounds: 2}}
	for k, q := range []string{"1.093", "1.150"} {
		rows = parseGoBench(strings.NewReader(out+"BenchmarkAppendPaired-2   	    3000	    356389 ns/op	    165689 same-ns/commit	    190538 store-ns/commit	         "+q+" store/same	    7584 B/op	     115 allocs/op\n"), "", store, raw, same)
		if got := rows[2].pairedSame; got != []float64{1.093, 1.150}[k] {
			t.Fatalf("the store row's interleaved ratio = %v, want %s", got, q)
		}
		for _, x := range rows {
			r.keepFastest(x)
		}
	}
	if md := r.markdown(); !strings.Contains(md, "| sqlite/store | 152.5 µs/commit | 65 | 4465 | 1.96× | 1.12× |") {
		t.Errorf("the table's store row lacks the median of its interleaved ratios, 1.12×:\n%s", md)
	}
}

// TestKnownPeers checks that every peer -peers runs by default has a label,
// a series in the plot and the summary, and a command in the repository.
func TestKnownPeers(t *testing.T) {
	series := map[string]bool{}
	for _, s := range peerSeries {
		if s.short != "" {
			series[s.key] = true
		}
	}
	for _, p := range splitList(knownPeers) {
		if peerLabel(p) == p {
			t.Errorf("peer %s has no label", p)
		}
		key := p
		if p == "js" {
			key = "openai-agents-js"
		}
		if !series[key] {
			t.Errorf("peer %s has no series in the plot and the summary", p)
		}
		gp, ok := goPeers[p]
		if !ok {
			if p != "js" {
				t.Errorf("peer %s is neither a Go peer nor js", p)
			}
			continue
		}
		dir := filepath.Join("..", "..", "peers", gp.dir)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			t.Errorf("peer %s: no module at %s: %v", p, dir, err)
		}
		if _, err := os.Stat(filepath.Join(dir, gp.args[0], "main.go")); err != nil {
			t.Errorf("peer %s: no command %s in %s: %v", p, gp.args[0], dir, err)
		}
	}
}

// TestMarkdownRawColumn checks the crash-safe group's second ratio: each
// crash-safe row over the raw driver doing its writes, beside the ratio to
// persistence alone, in the table, with a previous table's column after
// it, and in the CSV.
func TestMarkdownRawColumn(t *testing.T) {
	r := &report{env: machine{date: "2026-01-02 03:04 UTC", rounds: 1}}
	alone, raw := "crashsafe/sqlite/persistence/history=10", "crashsafe/sqlite/raw-driver/history=10"
	cs := newScenario("crashsafe/sqlite/checkpoint/history=10", "crashsafe", alone, 1)
	cs.Raw = raw
	skipped := newScenario("crashsafe/redis/checkpoint/history=10", "crashsafe", "crashsafe/redis/persistence/history=10", 1)
	skipped.Raw = "crashsafe/redis/raw-driver/history=10"
	mem := newScenario("crashsafe/memory/checkpoint/history=10", "crashsafe", "crashsafe/memory/persistence/history=10", 1)
	r.add(row{scenario: newScenario(alone, "crashsafe", "", 1), n: 1, ns: 100_000, allocs: 90, bytes: 9000, hasAllocs: true})
	r.add(row{scenario: newScenario(raw, "crashsafe", alone, 1), n: 1, ns: 200_000, allocs: 60, bytes: 6000, hasAllocs: true})
	r.add(row{scenario: cs, n: 1, ns: 300_000, allocs: 190, bytes: 19000, hasAllocs: true})
	r.add(row{scenario: skipped, skip: "no server"})
	r.add(row{scenario: mem, n: 1, ns: 10_000, allocs: 70, bytes: 7000, hasAllocs: true})
	md := r.markdown()
	for _, want := range []string{
		"| scenario | ns/unit | allocs/unit | B/unit | ratio | ÷ raw driver |\n|---|--:|--:|--:|--:|--:|\n",
		"| sqlite/persistence/history=10 | 100.0 µs/turn | 90 | 9000 | base |  |\n",
		"| sqlite/raw-driver/history=10 | 200.0 µs/turn | 60 | 6000 | 2.00× | base |\n",
		"| sqlite/checkpoint/history=10 | 300.0 µs/turn | 190 | 19000 | 3.00× | 1.50× |\n",
		"| redis/checkpoint/history=10 | skipped: no server | | | |  |\n",
		"| memory/checkpoint/history=10 | 10.0 µs/turn | 70 | 7000 | n/a |  |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
	if md := sampleReport().markdown(); strings.Contains(md, "÷ raw driver") || strings.Contains(md, "÷ same writes") {
		t.Error("a table whose rows name no raw driver has a column for it")
	}

	r.prev = &previous{run: "run of 2026-01-01", rows: map[string]figures{cs.Name: {ratio: 2, hasRatio: true, ratioText: "2.00×"}}}
	md = r.markdown()
	for _, want := range []string{
		"| scenario | ns/unit | allocs/unit | B/unit | ratio | ÷ raw driver | before |\n",
		"| sqlite/checkpoint/history=10 | 300.0 µs/turn | 190 | 19000 | 3.00× | 1.50× | 2.00× |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table with a previous one lacks %q:\n%s", want, md)
		}
	}
	if p := parsePrevious(md); p.rows[cs.Name].ratioText != "3.00×" {
		t.Errorf("parsePrevious read the checkpoint row as %+v, want its ratio to persistence, 3.00×", p.rows[cs.Name])
	}

	recs := writeAndReadCSV(t, r, filepath.Join(t.TempDir(), "t.csv"))
	if got := recs[3]; got[0] != cs.Name || got[12] != raw || got[13] != "1.500" {
		t.Errorf("the checkpoint row of the CSV = %v, want its raw driver and the ratio 1.500", got)
	}
}

// TestMarkdownSameColumn checks the crash-safe group's third ratio: each
// crash-safe row over the driver doing exactly the store's writes, after
// the ratio to the raw driver, in the table and in the CSV; the raw rows
// are bases in the columns whose rows name them, and blank in the other.
func TestMarkdownSameColumn(t *testing.T) {
	r := &report{env: machine{date: "2026-01-02 03:04 UTC", rounds: 1}}
	alone := "crashsafe/postgres/persistence/history=10"
	raw, same := "crashsafe/postgres/raw-driver/history=10", "crashsafe/postgres/raw-same-writes/history=10"
	cs := newScenario("crashsafe/postgres/checkpoint/history=10", "crashsafe", alone, 1)
	cs.Raw, cs.Same = raw, same
	r.add(row{scenario: newScenario(alone, "crashsafe", "", 1), n: 1, ns: 100_000, allocs: 60, bytes: 6000, hasAllocs: true})
	r.add(row{scenario: newScenario(raw, "crashsafe", alone, 1), n: 1, ns: 150_000, allocs: 100, bytes: 9000, hasAllocs: true})
	r.add(row{scenario: newScenario(same, "crashsafe", alone, 1), n: 1, ns: 240_000, allocs: 110, bytes: 9500, hasAllocs: true})
	r.add(row{scenario: cs, n: 1, ns: 300_000, allocs: 140, bytes: 26000, hasAllocs: true})
	md := r.markdown()
	for _, want := range []string{
		"| scenario | ns/unit | allocs/unit | B/unit | ratio | ÷ raw driver | ÷ same writes |\n|---|--:|--:|--:|--:|--:|--:|\n",
		"| postgres/persistence/history=10 | 100.0 µs/turn | 60 | 6000 | base |  |  |\n",
		"| postgres/raw-driver/history=10 | 150.0 µs/turn | 100 | 9000 | 1.50× | base |  |\n",
		"| postgres/raw-same-writes/history=10 | 240.0 µs/turn | 110 | 9500 | 2.40× |  | base |\n",
		"| postgres/checkpoint/history=10 | 300.0 µs/turn | 140 | 26000 | 3.00× | 2.00× | 1.25× |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
	if p := parsePrevious(md); p.rows[cs.Name].ratioText != "3.00×" {
		t.Errorf("parsePrevious read the checkpoint row as %+v, want its ratio to persistence, 3.00×", p.rows[cs.Name])
	}
	recs := writeAndReadCSV(t, r, filepath.Join(t.TempDir(), "t.csv"))
	if got := recs[4]; got[0] != cs.Name || got[13] != "2.000" || got[16] != same || got[17] != "1.250" {
		t.Errorf("the checkpoint row of the CSV = %v, want the ratios 2.000 to its raw driver and 1.250 to %s", got, same)
	}
}

// writeAndReadCSV writes r's CSV to path and reads its records back.
func writeAndReadCSV(t *testing.T, r *report, path string) [][]string {
	t.Helper()
	if err := r.writeCSV(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestPairedRatio checks that a Paired scenario's ratio, and its CPU
// ratio, are the medians of its rounds' ratios to the baseline's same
// rounds, not the fastest round's over the baseline's fastest (99/90 =
// 1.10 here), and that the table and the CSV give both.
func TestPairedRatio(t *testing.T) {
	base := newScenario("sealed/sqlite/checkpoint/history=10", "sealed", "", 1)
	sealed := newScenario("sealed/sqlite-sealed/checkpoint/history=10", "sealed", base.Name, 1)
	base.Paired, sealed.Paired = true, true
	r := &report{}
	for i, ns := range [][2]float64{{100, 99}, {90, 117}, {120, 126}} {
		cpu := [][2]float64{{50, 51}, {50, 52}, {50, 60}}[i]
		r.keepFastest(row{scenario: base, n: 1, ns: ns[0], cpu: cpu[0], hasCPU: true})
		r.keepFastest(row{scenario: sealed, n: 1, ns: ns[1], cpu: cpu[1], hasCPU: true})
	}
	x, _ := r.get(sealed.Name)
	if q, ok := r.ratio(x); !ok || math.Abs(q-1.05) > 1e-9 {
		t.Errorf("ratio = %v, %v; want the median of 0.99, 1.30 and 1.05: 1.05", q, ok)
	}
	if q, ok := r.cpuRatio(x); !ok || math.Abs(q-1.04) > 1e-9 {
		t.Errorf("CPU ratio = %v, %v; want the median of 1.02, 1.04 and 1.20: 1.04", q, ok)
	}
	md := r.markdown()
	// The CPU time is the median of the rounds' (52), not the fastest
	// round's (51).
	if want := "| sqlite-sealed/checkpoint/history=10 (CPU 52 ns/turn 1.04×) | 99 ns/turn | n/a | n/a | 1.05× |"; !strings.Contains(md, want) {
		t.Errorf("the table lacks %q:\n%s", want, md)
	}
	recs := writeAndReadCSV(t, r, filepath.Join(t.TempDir(), "t.csv"))
	if got := recs[2]; got[9] != "1.050" || got[14] != "52.0" || got[15] != "1.040" {
		t.Errorf("sealed row = %v, want ratio 1.050, CPU 52.0 ns and CPU ratio 1.040", got)
	}
	// An even count: the mean of the middle two.
	r.keepFastest(row{scenario: base, n: 1, ns: 100, cpu: 50, hasCPU: true})
	r.keepFastest(row{scenario: sealed, n: 1, ns: 120, cpu: 50, hasCPU: true})
	if q, ok := r.ratio(x); !ok || math.Abs(q-(1.05+1.20)/2) > 1e-9 {
		t.Errorf("ratio of four rounds = %v, %v; want the mean of 1.05 and 1.20", q, ok)
	}
}

// TestAdapterOwnShare checks that an adapter row's ratio is its own
// share: the median over the rounds of (adapter − sdk) ÷ sdk-typed in
// each round, not the fastest rounds' (here 104 − 100 over 130: 3.1%),
// printed in percent beside the median of the per-call shares its
// benchmark measured; and that BenchmarkAdapterShare's lines read as
// those three rows.
func TestAdapterOwnShare(t *testing.T) {
	out := "goos: linux\n" +
		"BenchmarkAdapterShare/openai-chat/plain/items=10-2   \t 200\t 290264 ns/op\t 18304 adapter-B/call\t 107.0 adapter-allocs/call\t 32222 adapter-ns/call\t 5.839 own-%\t 3.398 own-allocs-%\t 16808 sdk-B/call\t 89.00 sdk-allocs/call\t 26319 sdk-ns/call\t 50203 typed-B/call\t 531.1 typed-allocs/call\t 119622 typed-ns/call\n" +
		"PASS\n"
	rows := parseAdapterBench(strings.NewReader(out))
	if len(rows) != 3 {
		t.Fatalf("parsed %d rows, want 3: %+v", len(rows), rows)
	}
	if a := rows[2]; a.scenario.Name != "adapter/openai-chat/plain/items=10/adapter" || a.ns != 32222 || a.allocs != 107 || a.bytes != 18304 ||
		a.scenario.Own != rows[1].scenario.Name || a.scenario.Baseline != rows[0].scenario.Name || math.Abs(a.share-0.05839) > 1e-9 {
		t.Errorf("adapter row = %+v, want 32222 ns, 107 allocs, 18304 B, own share 5.839%% and sdk-typed, sdk as baseline and own part", a)
	}
	if x := rows[0]; x.scenario.Name != "adapter/openai-chat/plain/items=10/sdk-typed" || x.ns != 119622 || x.allocs != 531.1 {
		t.Errorf("typed row = %+v, want 119622 ns, 531.1 allocs", x)
	}

	typed, raw, adapter := adapterScenarios("openai-chat/plain/items=10")
	r := &report{}
	for i, ns := range [][3]float64{{100, 60, 66}, {130, 100, 104}, {120, 80, 86}} {
		share := []float64{0.05, 0.06, 0.02}[i]
		r.keepFastest(row{scenario: typed, n: 1, ns: ns[0]})
		r.keepFastest(row{scenario: raw, n: 1, ns: ns[1]})
		r.keepFastest(row{scenario: adapter, n: 1, ns: ns[2], share: share, hasShare: true})
	}
	x, _ := r.get(adapter.Name)
	if q, ok := r.ratio(x); !ok || math.Abs(q-0.05) > 1e-9 {
		t.Errorf("own share = %v, %v; want the median of 0.06, 0.031 and 0.05: 0.05", q, ok)
	}
	md := r.markdown()
	if want := "| openai-chat/plain/items=10/adapter (per call 5.0%) | 66 ns/call | n/a | n/a | 5.0% |"; !strings.Contains(md, want) {
		t.Errorf("the table lacks %q:\n%s", want, md)
	}
	p := parsePrevious(md)
	if f := p.rows[adapter.Name]; !f.hasRatio || math.Abs(f.ratio-0.05) > 1e-9 {
		t.Errorf("the previous table's adapter row reads as %+v, want the ratio 0.05", f)
	}
}

// TestFromResultPaired checks that a scenario interleaved with the raw
// driver's same writes has its own time per turn as its time, the ratio
// as its interleaved ratio, and neither among its notes.
func TestFromResultPaired(t *testing.T) {
	own, same, ratio := scenario.PairedMetrics()
	s := newScenario("crashsafe/postgres/checkpoint-paired/history=10", "crashsafe", "crashsafe/postgres/persistence/history=10", 1)
	res := testing.BenchmarkResult{N: 10, T: 5 * time.Millisecond, MemAllocs: 1000, MemBytes: 10000,
		Extra: map[string]float64{own: 300_000, same: 200_000, ratio: 1.5, "B/save": 984}}
	x := fromResult(s, res)
	if x.ns != 300_000 || x.pairedSame != 1.5 || x.note != "984 B/save" || x.allocs != 100 {
		t.Errorf("row = %+v, want 300 µs a turn, the ratio 1.5, the note 984 B/save and the two's allocations", x)
	}
	if x := fromResult(s, testing.BenchmarkResult{N: 10, T: 5 * time.Millisecond}); x.ns != 500_000 || x.pairedSame != 0 {
		t.Errorf("row of a result with no paired metrics = %+v, want its own time and no ratio", x)
	}
}
