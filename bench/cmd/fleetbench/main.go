// Command fleetbench runs the fleet simulation of package bench/fleet over
// a matrix of backends, worker processes and concurrent sessions, and
// writes one table and two plots.
//
//	go run ./bench/cmd/fleetbench
//
// Each configuration starts its worker processes (this program again),
// warms up, measures for a window and reports turns and runs per second,
// the turn latency's p50 and p99, the store's calls, round trips and bytes
// per turn, and conflicts and failures. The table (Markdown) goes to
// stdout and to OUT/fleet.md, every figure to OUT/fleet.csv, throughput
// against worker processes to OUT/fleet.png and p99 turn latency to
// OUT/fleet-p99.png.
//
// Flags:
//
//	-backends list   sqlite,postgres,redis-cluster,redis (default: sqlite, and postgres and
//	                 redis-cluster when TURNKIT_POSTGRES_URL and TURNKIT_REDIS_CLUSTER_ADDRS are set)
//	-processes list  worker processes (default 1,2,4)
//	-sessions list   concurrent sessions (default 100,1000)
//	-duration d      measurement window per configuration (default 30s)
//	-warmup d        warm-up before it (default 5s)
//	-latency d       the scripted model's latency per call (default 50ms)
//	-turns n         tool turns per run, then a final message (default 4)
//	-history n       session items a run reads (persistence.WithLimit; default 50)
//	-output n        bytes of a tool output and of a final message (default 512)
//	-river           run the postgres backend through River (package riverrun): the parent enqueues
//	                 the sessions' first runs as jobs, the worker processes work them and each run
//	                 enqueues its session's next; rows named postgres-river, River's queries counted
//	                 apart in the round trips (store + River)
//	-schema name     the PostgreSQL schema and Redis key prefix to own (default turnkit_fleet);
//	                 everything in it is deleted before and after each configuration
//	-out dir         output folder (default bench/results under the module root)
//	-replot          run nothing: redraw the plots from OUT/fleet.csv
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/turnkit/turnkit/bench/fleet"
)

func main() {
	fleet.ChildMain()
	cfg := config{}
	flag.StringVar(&cfg.backends, "backends", defaultBackends(), "comma-separated backends: sqlite, postgres, redis-cluster, redis")
	flag.StringVar(&cfg.processes, "processes", "1,2,4", "comma-separated worker process counts")
	flag.StringVar(&cfg.sessions, "sessions", "100,1000", "comma-separated concurrent session counts")
	flag.DurationVar(&cfg.sim.Duration, "duration", 30*time.Second, "measurement window per configuration")
	flag.DurationVar(&cfg.sim.Warmup, "warmup", 5*time.Second, "warm-up before the window")
	flag.DurationVar(&cfg.sim.ModelLatency, "latency", 50*time.Millisecond, "the scripted model's latency per call")
	flag.IntVar(&cfg.sim.ToolTurns, "turns", 4, "tool turns per run, then a final message")
	flag.IntVar(&cfg.sim.HistoryLimit, "history", 50, "session items a run reads as its history")
	flag.IntVar(&cfg.sim.OutputBytes, "output", 512, "bytes of a tool output and of a final message")
	flag.BoolVar(&cfg.river, "river", false, "run the postgres backend through River (riverrun jobs)")
	flag.StringVar(&cfg.schema, "schema", "turnkit_fleet", "PostgreSQL schema and Redis key prefix the simulation owns")
	flag.StringVar(&cfg.out, "out", "", "output folder (default bench/results under the module root)")
	flag.BoolVar(&cfg.replot, "replot", false, "run nothing: redraw the plots from OUT/fleet.csv")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

type config struct {
	backends, processes, sessions, schema, out string
	replot, river                              bool
	sim                                        fleet.Config
}

func defaultBackends() string {
	bs := []string{fleet.SQLite}
	if os.Getenv("TURNKIT_POSTGRES_URL") != "" {
		bs = append(bs, fleet.Postgres)
	}
	if os.Getenv("TURNKIT_REDIS_CLUSTER_ADDRS") != "" {
		bs = append(bs, fleet.RedisCluster)
	}
	return strings.Join(bs, ",")
}

func run(ctx context.Context, cfg config, stdout, progress io.Writer) error {
	procs, err := ints(cfg.processes)
	if err != nil {
		return fmt.Errorf("-processes: %w", err)
	}
	sessions, err := ints(cfg.sessions)
	if err != nil {
		return fmt.Errorf("-sessions: %w", err)
	}
	if cfg.out == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		cfg.out = filepath.Join(root, "bench", "results")
	}
	if err := os.MkdirAll(cfg.out, 0o750); err != nil {
		return err
	}
	if cfg.replot {
		rep, err := readCSV(filepath.Join(cfg.out, "fleet.csv"))
		if err != nil {
			return err
		}
		rep.sim = cfg.sim
		return rep.plot(filepath.Join(cfg.out, "fleet.png"), filepath.Join(cfg.out, "fleet-p99.png"))
	}
	tmp, err := os.MkdirTemp("", "fleetbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var backends []fleet.Backend
	for name := range strings.SplitSeq(cfg.backends, ",") {
		be, err := backend(strings.TrimSpace(name), cfg.schema, tmp)
		if err != nil {
			return err
		}
		backends = append(backends, be)
	}
	launch, err := fleet.SelfLauncher()
	if err != nil {
		return err
	}
	rep := &report{started: time.Now().UTC(), load: loadAvg(), sim: cfg.sim}
	for _, be := range backends {
		for _, m := range sessions {
			for _, n := range procs {
				sim := cfg.sim
				sim.Backend, sim.Processes, sim.Sessions = be, n, m
				sim.River = cfg.river && be.Name == fleet.Postgres
				name := be.Name
				if sim.River {
					name = postgresRiver
				}
				fmt.Fprintf(progress, "fleetbench: %s, %d processes, %d sessions (load %s) ... ", name, n, m, loadAvg())
				load := loadAvg()
				res, err := fleet.Simulate(ctx, sim, launch)
				if err != nil {
					fmt.Fprintf(progress, "failed: %v\n", err)
					if ctx.Err() != nil {
						return ctx.Err()
					}
					rep.rows = append(rep.rows, row{backend: name, processes: n, sessions: m, load: load, err: err})
					continue
				}
				fmt.Fprintf(progress, "%.0f turns/s, p99 %v, %d failures\n", res.TurnsPerSecond(), res.P99.Round(time.Millisecond), res.Failures)
				rep.rows = append(rep.rows, row{backend: name, processes: n, sessions: m, load: load, res: res})
			}
		}
	}
	var md strings.Builder
	rep.markdown(&md)
	fmt.Fprint(stdout, md.String())
	if err := os.WriteFile(filepath.Join(cfg.out, "fleet.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	if err := rep.writeCSV(filepath.Join(cfg.out, "fleet.csv")); err != nil {
		return err
	}
	return rep.plot(filepath.Join(cfg.out, "fleet.png"), filepath.Join(cfg.out, "fleet-p99.png"))
}

// postgresRiver names the rows of the postgres backend run through River.
const postgresRiver = "postgres-river"

func backend(name, schema, tmp string) (fleet.Backend, error) {
	be := fleet.Backend{Name: name, Schema: schema}
	switch name {
	case fleet.SQLite:
		be.Dir = filepath.Join(tmp, "sqlite")
	case fleet.Postgres:
		if be.PostgresURL = os.Getenv("TURNKIT_POSTGRES_URL"); be.PostgresURL == "" {
			return be, fmt.Errorf("postgres: TURNKIT_POSTGRES_URL is not set; run eval \"$(.ci/services start)\"")
		}
	case fleet.RedisCluster:
		addrs := os.Getenv("TURNKIT_REDIS_CLUSTER_ADDRS")
		if addrs == "" {
			return be, fmt.Errorf("redis-cluster: TURNKIT_REDIS_CLUSTER_ADDRS is not set; run eval \"$(.ci/services start)\"")
		}
		be.ClusterAddrs = strings.Split(addrs, ",")
	case fleet.Redis:
		if be.RedisURL = os.Getenv("TURNKIT_REDIS_URL"); be.RedisURL == "" {
			return be, fmt.Errorf("redis: TURNKIT_REDIS_URL is not set; run eval \"$(.ci/services start)\"")
		}
	default:
		return be, fmt.Errorf("unknown backend %q", name)
	}
	return be, nil
}

func ints(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers", list)
		}
		out = append(out, n)
	}
	return out, nil
}

// loadAvg returns the one-minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

type row struct {
	backend             string
	processes, sessions int
	load                string
	res                 *fleet.Result
	err                 error
}

type report struct {
	started time.Time
	load    string
	sim     fleet.Config
	rows    []row
}

func (r *report) markdown(w io.Writer) {
	s := r.sim
	fmt.Fprintf(w, "Run of %s on %s/%s, %d cores (load average %s at the start), %s.\n",
		r.started.Format("2006-01-02 15:04 MST"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), r.load, runtime.Version())
	fmt.Fprintf(w, "Each run: %d tool turns and a final message, the model answering after %v; tool outputs and final messages of %d bytes; a run reads the last %d session items.\n",
		s.ToolTurns, s.ModelLatency, s.OutputBytes, s.HistoryLimit)
	fmt.Fprintf(w, "Each configuration: %v of warm-up, then %v measured.\n\n", s.Warmup, s.Duration)
	fmt.Fprintln(w, "| backend | processes | sessions | turns/s | runs/s | p50 turn | p99 turn | store calls/turn | round trips/turn | B/turn written | B/turn stored | CPU µs/turn worker + server | conflicts (retried) | failures | load |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, x := range r.rows {
		if x.err != nil {
			fmt.Fprintf(w, "| %s | %d | %d | failed: %s | | | | | | | | | | | %s |\n", x.backend, x.processes, x.sessions,
				strings.ReplaceAll(x.err.Error(), "|", "\\|"), x.load)
			continue
		}
		res := x.res
		rt := "n/a"
		if x.backend != fleet.SQLite {
			rt = fmt.Sprintf("%.1f", res.PerTurn(res.Store.RoundTrips))
		}
		if x.backend == postgresRiver {
			rt += fmt.Sprintf(" + %.1f", res.PerTurn(res.Store.QueueRoundTrips))
		}
		cpu := fmt.Sprintf("%.0f + %.0f", res.PerTurn(res.WorkerCPU.Microseconds()), res.PerTurn(res.ServerCPU.Microseconds()))
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %.0f | %s | %s | %.2f | %s | %.0f | %.0f | %s | %d (%d) | %d | %s |\n",
			x.backend, x.processes, x.sessions, res.TurnsPerSecond(), res.RunsPerSecond(),
			ms(res.P50), ms(res.P99), res.PerTurn(res.Store.Calls), rt,
			res.PerTurn(res.Store.Bytes), res.StoredPerTurn(), cpu, res.Conflicts, res.Retried, res.Failures, x.load)
	}
	for _, x := range r.rows {
		if x.res != nil && len(x.res.Errors) > 0 {
			fmt.Fprintf(w, "\n%s, %d processes, %d sessions: first errors: %q\n", x.backend, x.processes, x.sessions, x.res.Errors)
		}
	}
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

func (r *report) writeCSV(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"backend", "processes", "sessions", "window_s", "turns", "runs", "turns_per_s", "runs_per_s",
		"p50_ms", "p99_ms", "store_calls", "round_trips", "queue_round_trips", "bytes_written", "stored_bytes", "all_turns",
		"worker_cpu_ms", "server_cpu_ms", "conflicts", "retried", "failures", "load", "error"})
	for _, x := range r.rows {
		rec := []string{x.backend, strconv.Itoa(x.processes), strconv.Itoa(x.sessions)}
		if x.err != nil {
			rec = append(rec, make([]string, 18)...)
			rec = append(rec, x.load, x.err.Error())
		} else {
			res := x.res
			f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
			i := func(v int64) string { return strconv.FormatInt(v, 10) }
			rec = append(rec, f(res.Window.Seconds()), i(res.Turns), i(res.Runs), f(res.TurnsPerSecond()), f(res.RunsPerSecond()),
				f(float64(res.P50)/1e6), f(float64(res.P99)/1e6), i(res.Store.Calls), i(res.Store.RoundTrips), i(res.Store.QueueRoundTrips), i(res.Store.Bytes),
				i(res.Stored), i(res.AllTurns), i(res.WorkerCPU.Milliseconds()), i(res.ServerCPU.Milliseconds()), i(res.Conflicts), i(res.Retried), i(res.Failures), x.load, "")
		}
		w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readCSV reads back what writeCSV wrote, as far as the plots need it.
func readCSV(path string) (*report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	rep := &report{}
	for _, rec := range recs[1:] {
		x := row{backend: rec[0]}
		x.processes, _ = strconv.Atoi(rec[1])
		x.sessions, _ = strconv.Atoi(rec[2])
		if rec[len(rec)-1] != "" {
			continue // failed
		}
		window, _ := strconv.ParseFloat(rec[3], 64)
		turns, _ := strconv.ParseInt(rec[4], 10, 64)
		p99, _ := strconv.ParseFloat(rec[9], 64)
		x.res = &fleet.Result{Window: time.Duration(window * float64(time.Second)), Turns: turns,
			P99: time.Duration(p99 * float64(time.Millisecond))}
		rep.rows = append(rep.rows, x)
	}
	return rep, nil
}

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
			return "", fmt.Errorf("the turnkit module root is not at or above the working directory; run fleetbench inside the repository")
		}
		dir = parent
	}
}
