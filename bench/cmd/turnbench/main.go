// Command turnbench runs turnkit's benchmark scenarios and its peers side by
// side, and prints one table with the ratio of each figure to the bare loop.
//
//	go run ./bench/cmd/turnbench
//
// It runs every scenario of bench/internal/scenario through testing.Benchmark
// (progress on stderr), the session backends' own BenchmarkAppend (each
// store against its raw driver) through go test, then the peers of the
// nested modules under bench/peers:
// eino's ReAct and ADK agents through `go run ./cmd/einobench`, Genkit
// through `go run ./cmd/genkitbench` in peers/genkit, langchaingo through
// `go run ./cmd/langchaingobench` in peers/langchaingo, and @openai/agents
// through node (after `npm ci` when its node_modules are missing). A peer that cannot be
// built or installed is reported as missing and the rest goes on. It writes
// the table (Markdown) to stdout and to OUT/table.md, every figure to
// OUT/turnbench.csv, and the per-turn cost against the run length of
// turnkit and each peer to OUT/turns.png.
//
// Flags:
//
//	-benchtime d   time (or NNNx iterations) per scenario and round, as go test -benchtime (default 500ms)
//	-count n       rounds (default 3): every scenario and peer runs n times, the rounds
//	               interleaved, and the fastest round of each counts, which keeps a
//	               shared, noisy machine's bursts out of the figures; a Paired
//	               scenario's ratio (the encryption rows) is instead the median
//	               over the rounds of its ratio to its baseline in each round
//	-run regexp    run only the scenarios whose name matches (the adapter rows,
//	               which BenchmarkAdapterShare in bench measures, only when the
//	               regexp's text names "adapter")
//	-peers list    peers to run: eino,eino-adk,genkit,langchaingo,js (default all; "" for none)
//	-out dir       output folder (default bench/results under the module root,
//	               the files bench/README.md shows)
//	-readme file   also replace the table between the turnbench markers of this
//	               Markdown file (bench/README.md) with this run's, keeping the
//	               replaced table's ratio and allocations in a column "before" for
//	               the rows that moved by more than 10%; not with -run (a filtered
//	               run would drop the rows it did not run)
//
// With -growth it runs, instead, the growth scenarios once each: one long run
// of -growth-turns tool turns (the first and last 100 turns' cost) and a
// conversation measured at -growth-sizes items of history (-growth-messages
// messages at each), on each backend of -growth-backends, with persistence
// alone and with the crash-safe chain; it writes OUT/table.md, OUT/growth.csv
// and OUT/growth.png (OUT defaults to bench/results/growth):
//
//	go run ./bench/cmd/turnbench -growth
//	-growth-turns n        tool turns of the long run (default 10000; 0: no long run)
//	-growth-sizes list     history sizes of the conversation (default 100,1000,10000,100000; "": none)
//	-growth-messages n     messages measured at each size (default 10)
//	-growth-backends list  memory,sqlite,postgres,redis (the default)
//	-growth-view n         the model's view in the conversation: the last n items (default 0: all)
//	-growth-delete-finished  the crash-safe chain deletes finished runs' checkpoints
//	-growth-keep-last n    the crash-safe chain keeps the checkpoints of the session's last n finished runs
//	-growth-keep-for d     the crash-safe chain keeps finished runs' checkpoints for d (one message a minute)
//	-growth-by-reference   checkpoints refer to the session history instead of copying it
//	-growth-openai         the model is the Responses adapter over an in-process fake API (bytes sent: request bodies)
//	-growth-chain          chain responses across runs (openai.ChainResponses, persistence.WithContinuation)
//	-growth-compact n      bound the model's view at n estimated tokens (compaction middleware, a summary)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

func main() {
	testing.Init()
	cfg := config{}
	flag.StringVar(&cfg.benchtime, "benchtime", "500ms", "time or NNNx iterations per scenario and round, as go test -benchtime")
	flag.IntVar(&cfg.count, "count", 3, "rounds: every scenario and peer runs this many times, interleaved, and the fastest round counts")
	flag.StringVar(&cfg.run, "run", "", "run only the scenarios whose name matches this regexp")
	flag.StringVar(&cfg.peers, "peers", knownPeers, "comma-separated peers to run ("+knownPeers+"); empty for none")
	flag.StringVar(&cfg.out, "out", "", "output folder (default bench/results under the module root)")
	flag.StringVar(&cfg.readme, "readme", "", "replace the table between the turnbench markers of this Markdown file, keeping the previous figures of the rows that moved by more than 10%")
	flag.BoolVar(&cfg.growth, "growth", false, "run the growth scenarios (a long run, a conversation) instead")
	flag.IntVar(&cfg.growthTurns, "growth-turns", scenario.LongRunTurns, "tool turns of the long run; 0 for none")
	flag.StringVar(&cfg.growthSizes, "growth-sizes", joinInts(scenario.ConversationSizes()), "history sizes of the conversation; empty for none")
	flag.IntVar(&cfg.growthMessages, "growth-messages", 10, "messages measured at each history size")
	flag.IntVar(&cfg.growthView, "growth-view", 0, "the conversation's model view: the last n items of the session (0: all)")
	flag.BoolVar(&cfg.growthDelete, "growth-delete-finished", false, "the crash-safe chain deletes finished runs' checkpoints (checkpoint.DeleteFinished)")
	flag.IntVar(&cfg.growthKeepLast, "growth-keep-last", 0, "the crash-safe chain keeps the checkpoints of the session's last n finished runs (checkpoint.KeepLast; 0: off)")
	flag.DurationVar(&cfg.growthKeepFor, "growth-keep-for", 0, "the crash-safe chain keeps finished runs' checkpoints for d, on a clock of one message a minute (checkpoint.KeepFor; 0: off)")
	flag.BoolVar(&cfg.growthByRef, "growth-by-reference", true, "checkpoints refer to the session history (the default; false: persistence.WithHistoryCopied)")
	flag.BoolVar(&cfg.growthOpenAI, "growth-openai", false, "the conversation's model is the Responses adapter over an in-process fake API: bytes sent are request bodies")
	flag.BoolVar(&cfg.growthChain, "growth-chain", false, "chain responses on the server across runs (openai.ChainResponses, persistence.WithContinuation); implies -growth-openai")
	flag.IntVar(&cfg.growthCompact, "growth-compact", 0, "bound the model's view at n estimated tokens with the compaction middleware and a summary (0: none)")
	flag.StringVar(&cfg.growthBackends, "growth-backends", strings.Join(scenario.BackendNames(), ","), "backends of the growth scenarios (also sqlite-sealed: SQLite with encryption at rest)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "turnbench:", err)
		os.Exit(1)
	}
}

type config struct {
	benchtime string
	count     int
	run       string
	peers     string
	out       string
	readme    string

	growth                      bool
	growthTurns, growthMessages int
	growthView                  int
	growthDelete, growthByRef   bool
	growthKeepLast              int
	growthKeepFor               time.Duration
	growthOpenAI, growthChain   bool
	growthCompact               int
	growthSizes, growthBackends string
}

func run(ctx context.Context, cfg config, stdout, progress io.Writer) error {
	if cfg.count < 1 {
		return fmt.Errorf("-count %d: want at least 1", cfg.count)
	}
	if err := flag.Set("test.benchtime", cfg.benchtime); err != nil {
		return fmt.Errorf("-benchtime %q: %w", cfg.benchtime, err)
	}
	var filter *regexp.Regexp
	if cfg.run != "" {
		var err error
		if filter, err = regexp.Compile(cfg.run); err != nil {
			return fmt.Errorf("-run: %w", err)
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if cfg.growth {
		sizes, err := parseInts(cfg.growthSizes)
		if err != nil {
			return fmt.Errorf("-growth-sizes: %w", err)
		}
		if cfg.out == "" {
			cfg.out = filepath.Join(root, "bench", "results", "growth")
		}
		return runGrowth(ctx, growthConfig{backends: splitList(cfg.growthBackends), turns: cfg.growthTurns,
			sizes: sizes, messages: max(1, cfg.growthMessages),
			conv: scenario.ConversationOptions{View: cfg.growthView, DeleteFinished: cfg.growthDelete, KeepLast: cfg.growthKeepLast, KeepFor: cfg.growthKeepFor, ByReference: cfg.growthByRef,
				OpenAI: cfg.growthOpenAI, Chain: cfg.growthChain, Compact: cfg.growthCompact}}, cfg.out, stdout, progress)
	}
	if cfg.out == "" {
		cfg.out = filepath.Join(root, "bench", "results")
	}
	if cfg.readme != "" {
		if cfg.run != "" {
			return fmt.Errorf("-readme with -run %q: a filtered run does not replace the whole table", cfg.run)
		}
		b, err := os.ReadFile(cfg.readme)
		if err != nil {
			return fmt.Errorf("-readme: %w", err)
		}
		if _, err := tableIn(string(b)); err != nil {
			return fmt.Errorf("-readme %s: %w", cfg.readme, err)
		}
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}

	env := describeMachine(ctx)
	env.rounds = cfg.count
	rep := &report{env: env}
	var todo []scenario.Scenario
	for _, s := range scenario.All() {
		if filter == nil || filter.MatchString(s.Name) {
			todo = append(todo, s)
		}
	}
	start := time.Now()
	peers := splitList(cfg.peers)
	runLengths := scenario.RunLengths()
	missing := map[string]bool{}
	for round := 1; round <= cfg.count; round++ {
		tag := ""
		if cfg.count > 1 {
			tag = fmt.Sprintf("round %d/%d ", round, cfg.count)
		}
		for i, s := range todo {
			if err := ctx.Err(); err != nil {
				return err
			}
			prefix := fmt.Sprintf("%s[%2d/%d] %-44s", tag, i+1, len(todo), s.Name)
			if s.Skip != "" {
				if round == 1 {
					fmt.Fprintf(progress, "%s skipped: %s\n", prefix, s.Skip)
					rep.add(row{scenario: s, skip: s.Skip})
				}
				continue
			}
			fmt.Fprintf(progress, "%s ", prefix)
			t0 := time.Now()
			res := testing.Benchmark(s.Bench)
			if res.N == 0 {
				fmt.Fprintln(progress, "FAILED")
				rep.add(row{scenario: s, skip: "the benchmark failed; run it with go test -bench to see why"})
				continue
			}
			r := fromResult(s, res)
			rep.keepFastest(r)
			fmt.Fprintf(progress, "%s/%s  %s allocs  (%d×, %s)\n", formatNs(r.ns), s.Unit, formatNum(r.allocs), res.N, time.Since(t0).Round(100*time.Millisecond))
		}
		if filter == nil || strings.Contains(cfg.run, "adapter") {
			runAdapters(ctx, rep, root, cfg.benchtime, filter, tag, round, progress)
		}
		for _, be := range sessionBackends {
			store, raw, same := sessionScenarios(be.name)
			if filter != nil && !filter.MatchString(store.Name) && !filter.MatchString(raw.Name) {
				continue
			}
			if be.env != "" && os.Getenv(be.env) == "" {
				if round == 1 {
					store.Same = "" // no row of it
					why := be.env + ` is not set; run eval "$(.ci/services start)" first`
					fmt.Fprintf(progress, "%ssession/%s: skipped: %s\n", tag, be.name, why)
					rep.add(row{scenario: raw, skip: why})
					rep.add(row{scenario: store, skip: why})
				}
				continue
			}
			fmt.Fprintf(progress, "%ssession/%s: go test -bench BenchmarkAppend %s ... ", tag, be.name, be.pkg)
			rows, err := runGoBench(ctx, root, be.pkg, cfg.benchtime, "", store, raw, same)
			if err != nil {
				fmt.Fprintln(progress, "FAILED")
				if round == 1 {
					store.Same = ""
					rep.add(row{scenario: raw, skip: firstLine(err.Error())})
					rep.add(row{scenario: store, skip: firstLine(err.Error())})
				}
				continue
			}
			for _, x := range rows {
				if x.skip != "" {
					if _, ok := rep.byName[x.scenario.Name]; !ok {
						rep.add(x)
					}
					continue
				}
				rep.keepFastest(x)
			}
			fmt.Fprintf(progress, "store %s, raw driver %s per commit\n", formatNs(rows[len(rows)-1].ns), formatNs(rows[0].ns))
		}
		for _, p := range peers {
			if err := ctx.Err(); err != nil {
				return err
			}
			if missing[p] {
				continue
			}
			fmt.Fprintf(progress, "%speer %s: runs of %s turns (long runs take a while)\n", tag, p, joinInts(runLengths))
			rows, version, err := runPeer(ctx, p, root, cfg.benchtime, runLengths, progress)
			if err != nil {
				fmt.Fprintf(progress, "peer %s: missing: %v\n", p, err)
				missing[p] = true
				rep.missing = append(rep.missing, fmt.Sprintf("%s: %v", peerLabel(p), firstLine(err.Error())))
				continue
			}
			if round == 1 {
				rep.env.peers = append(rep.env.peers, peerLabel(p)+" "+version)
			}
			for _, r := range rows {
				rep.keepFastest(r)
			}
		}
	}
	fmt.Fprintf(progress, "done in %s\n\n", time.Since(start).Round(time.Second))

	table := rep.markdown()
	if cfg.readme != "" {
		b, err := os.ReadFile(cfg.readme)
		if err != nil {
			return fmt.Errorf("-readme: %w", err)
		}
		var md string
		if md, table, err = regenerate(string(b), rep); err != nil {
			return fmt.Errorf("-readme %s: %w", cfg.readme, err)
		}
		if err := os.WriteFile(cfg.readme, []byte(md), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(progress, "replaced the table of %s\n", cfg.readme)
	}
	if _, err := io.WriteString(stdout, table); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "table.md"), []byte(table), 0o644); err != nil {
		return err
	}
	if err := rep.writeCSV(filepath.Join(cfg.out, "turnbench.csv")); err != nil {
		return err
	}
	if err := rep.plot(filepath.Join(cfg.out, "turns.png")); err != nil {
		return err
	}
	if err := rep.plotCrashSafe(filepath.Join(cfg.out, "crashsafe.png")); err != nil {
		return err
	}
	fmt.Fprintf(progress, "wrote %s, %s and %s\n",
		filepath.Join(cfg.out, "table.md"), filepath.Join(cfg.out, "turnbench.csv"), filepath.Join(cfg.out, "turns.png"))
	return nil
}

// runAdapters runs one round of BenchmarkAdapterShare and adds its rows
// that filter (if any) matches to rep; a failure is reported as a skipped
// row in the first round.
func runAdapters(ctx context.Context, rep *report, root, benchtime string, filter *regexp.Regexp, tag string, round int, progress io.Writer) {
	fmt.Fprintf(progress, "%sadapters: go test -bench BenchmarkAdapterShare in bench ... ", tag)
	rows, err := runAdapterBench(ctx, root, benchtime)
	if err != nil {
		fmt.Fprintln(progress, "FAILED")
		if round == 1 {
			s := scenario.Scenario{Name: "adapter/all", Group: "adapter", PerOp: 1, Unit: "call"}
			rep.add(row{scenario: s, skip: firstLine(err.Error())})
		}
		return
	}
	kept := 0
	for _, x := range rows {
		if filter == nil || filter.MatchString(x.scenario.Name) {
			rep.keepFastest(x)
			kept++
		}
	}
	fmt.Fprintf(progress, "%d rows\n", kept)
}

// moduleRoot finds the turnkit module root from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/turnkit/turnkit\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("the turnkit module root is not at or above the working directory; run turnbench inside the repository")
		}
		dir = parent
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
