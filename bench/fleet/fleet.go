package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnkit/turnkit/internal/childproc"
)

// A Config is one simulation: Processes worker processes serve Sessions
// concurrent sessions on one backend.
type Config struct {
	Backend Backend `json:"backend"`
	// Processes is the number of worker processes (default 1); Sessions
	// the number of sessions served at once (default 100), split between
	// the processes by session number, as a job queue keyed by session
	// would route them: each session has one run in progress at a time.
	Processes int `json:"processes"`
	Sessions  int `json:"sessions"`
	// ToolTurns is the tool turns of a run (default 4); a run is ToolTurns
	// model calls answered with one tool call each, then one answered with
	// a message.
	ToolTurns int `json:"tool_turns"`
	// ModelLatency is how long the scripted model takes to answer
	// (default 50ms).
	ModelLatency time.Duration `json:"model_latency"`
	// ArgBytes and OutputBytes size a tool call's arguments (default 64)
	// and the tool's output and the final message (default 512): random
	// words, different in every call.
	ArgBytes    int `json:"arg_bytes"`
	OutputBytes int `json:"output_bytes"`
	// HistoryLimit is the session items a run reads as its history
	// (persistence.WithLimit; default 50).
	HistoryLimit int `json:"history_limit"`
	// Warmup runs before the measurement window (default 5s), Duration is
	// the window (default 30s).
	Warmup   time.Duration `json:"warmup"`
	Duration time.Duration `json:"duration"`
	// River runs the simulation through River (package riverrun), on the
	// PostgreSQL backend only: instead of each process looping over its
	// share of the sessions, the parent enqueues every session's first run
	// as a riverrun job, the worker processes work the jobs with River's
	// PostgreSQL driver (riverpgxv5; River's tables in a schema of their
	// own, the backend's Schema with "_river" added), and each run that
	// ends enqueues its session's next run. Any process may take any
	// session's run; each session still has one run in progress at a
	// time.
	River bool `json:"river,omitempty"`
}

func (c *Config) defaults() {
	setDefault(&c.Processes, 1)
	setDefault(&c.Sessions, 100)
	setDefault(&c.ToolTurns, 4)
	setDefault(&c.ModelLatency, 50*time.Millisecond)
	setDefault(&c.ArgBytes, 64)
	setDefault(&c.OutputBytes, 512)
	setDefault(&c.HistoryLimit, 50)
	setDefault(&c.Warmup, 5*time.Second)
	setDefault(&c.Duration, 30*time.Second)
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// A Result is what a simulation measured, summed over its processes.
type Result struct {
	Config Config `json:"config"`
	// Window is the measurement window; Turns and Runs are the turns and
	// runs that ended in it.
	Window time.Duration `json:"window"`
	Turns  int64         `json:"turns"`
	Runs   int64         `json:"runs"`
	// P50 and P99 are the turn latency's percentiles: the time from a model
	// call's start to the next one's (the last turn: to the run's end),
	// which holds the model's latency, the tool, and the turn's saves and
	// appends.
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	// Store is the store traffic during the window.
	Store Counters `json:"store"`
	// Stored is how much the backend's storage grew over the whole
	// simulation, and AllTurns the turns of the whole simulation (warm-up
	// and the runs that ended after the window included).
	Stored   int64 `json:"stored"`
	AllTurns int64 `json:"all_turns"`
	// WorkerCPU is the CPU time the worker processes used during the
	// window; ServerCPU the CPU time the server processes used (the
	// PostgreSQL backends of the workers' connections, or the Redis
	// servers; none for SQLite, which runs in the workers).
	WorkerCPU time.Duration `json:"worker_cpu"`
	ServerCPU time.Duration `json:"server_cpu"`
	// Conflicts are the typed conflicts (state.ErrConflict), each retried
	// by resuming the run; Retried the retries that succeeded. Failures
	// are runs that failed with anything else; Errors holds a few.
	Conflicts int64    `json:"conflicts"`
	Retried   int64    `json:"retried"`
	Failures  int64    `json:"failures"`
	Errors    []string `json:"errors,omitempty"`
}

// TurnsPerSecond returns the turns per second of the window.
func (r *Result) TurnsPerSecond() float64 { return float64(r.Turns) / r.Window.Seconds() }

// RunsPerSecond returns the runs per second of the window.
func (r *Result) RunsPerSecond() float64 { return float64(r.Runs) / r.Window.Seconds() }

// PerTurn returns n per turn of the window.
func (r *Result) PerTurn(n int64) float64 {
	if r.Turns == 0 {
		return 0
	}
	return float64(n) / float64(r.Turns)
}

// StoredPerTurn returns the storage growth per turn of the whole
// simulation.
func (r *Result) StoredPerTurn() float64 {
	if r.AllTurns == 0 {
		return 0
	}
	return float64(r.Stored) / float64(r.AllTurns)
}

// A Launcher returns the command that starts a worker process: a program
// whose main (or TestMain) calls [ChildMain] first.
type Launcher = childproc.Launcher

// SelfLauncher starts the running executable again with args (a test
// binary passes "-test.run=^$").
func SelfLauncher(args ...string) (Launcher, error) {
	l, err := childproc.Self(args...)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return l, nil
}

// EnvChild is the environment variable that makes a program a worker
// process of a simulation: [ChildMain] reads its configuration from it.
const EnvChild = "TURNKIT_FLEET_CHILD"

type childConfig struct {
	Config Config `json:"config"`
	Index  int    `json:"index"`
}

// childReport is what a worker process reports when it is done.
type childReport struct {
	Turns, Runs, AllTurns        int64
	CPU                          time.Duration // during the window
	Latencies                    []int64       // µs
	Store                        Counters
	Conflicts, Retried, Failures int64
	Errors                       []string
}

// Simulate runs one simulation: it empties the backend's schema (or key
// prefix, or file), starts cfg.Processes worker processes with launch,
// lets them open their stores, starts them all at once, and collects
// their reports after the warm-up and the window. Every worker process
// serves its sessions in a loop of runs with the crash-safe chain
// (the checkpointer's middleware with persistence through
// checkpoint.WithSession; one store for both, so that a commit's
// save and append are one SaveAppend). It empties the backend again at
// the end.
func Simulate(ctx context.Context, cfg Config, launch Launcher) (*Result, error) {
	cfg.defaults()
	be := cfg.Backend
	if err := be.reset(ctx); err != nil {
		return nil, fmt.Errorf("fleet: empty %s: %w", be.Name, err)
	}
	defer be.reset(context.WithoutCancel(ctx))
	// Create the schema once, before the processes race to.
	st, err := be.open(ctx, &counters{})
	if err != nil {
		return nil, err
	}
	st.Close()
	if cfg.River {
		if err := setupRiver(ctx, be); err != nil {
			return nil, err
		}
		defer dropRiver(context.WithoutCancel(ctx), be)
	}
	before, err := be.stored(ctx)
	if err != nil {
		return nil, err
	}
	children := make([]*child, cfg.Processes)
	defer func() {
		for _, c := range children {
			if c != nil {
				c.Kill()
			}
		}
	}()
	for i := range children {
		if children[i], err = startChild(launch, childConfig{Config: cfg, Index: i}); err != nil {
			return nil, err
		}
	}
	for _, c := range children {
		if err := c.expect(ctx, "ready", time.Minute); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	for _, c := range children {
		fmt.Fprintf(c.Stdin, "go %d\n", start.UnixNano())
	}
	if cfg.River {
		if err := enqueueFirst(ctx, cfg); err != nil {
			return nil, err
		}
	}
	res := &Result{Config: cfg, Window: cfg.Duration}
	// The servers' CPU time over the window, measured beside the workers.
	serverDone := make(chan error, 1)
	go func() {
		time.Sleep(time.Until(start.Add(cfg.Warmup)))
		pids, err := be.serverPIDs(ctx)
		if err != nil {
			serverDone <- err
			return
		}
		t0 := serverCPU(pids)
		time.Sleep(time.Until(start.Add(cfg.Warmup + cfg.Duration)))
		res.ServerCPU = serverCPU(pids) - t0
		serverDone <- nil
	}()
	var lat []int64
	for _, c := range children {
		rep, err := c.report(ctx, cfg.Warmup+cfg.Duration+2*time.Minute)
		if err != nil {
			return nil, err
		}
		res.Turns += rep.Turns
		res.WorkerCPU += rep.CPU
		res.Runs += rep.Runs
		res.AllTurns += rep.AllTurns
		res.Store.Calls += rep.Store.Calls
		res.Store.RoundTrips += rep.Store.RoundTrips
		res.Store.Bytes += rep.Store.Bytes
		res.Store.QueueRoundTrips += rep.Store.QueueRoundTrips
		res.Conflicts += rep.Conflicts
		res.Retried += rep.Retried
		res.Failures += rep.Failures
		res.Errors = append(res.Errors, rep.Errors...)
		lat = append(lat, rep.Latencies...)
	}
	for _, c := range children { // their stores closed
		if err := c.wait(ctx, time.Minute); err != nil {
			return nil, err
		}
	}
	if err := <-serverDone; err != nil {
		return nil, fmt.Errorf("fleet: server processes: %w", err)
	}
	slices.Sort(lat)
	res.P50, res.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	after, err := be.stored(ctx)
	if err != nil {
		return nil, err
	}
	res.Stored = after - before
	return res, nil
}

// percentile returns the q-quantile of sorted µs figures.
func percentile(sorted []int64, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return time.Duration(sorted[i]) * time.Microsecond
}

// ChildMain runs the program as a worker process of a simulation if
// [EnvChild] is set, and then exits; otherwise it returns at once. Call
// it first thing in main or TestMain of a program that [Simulate] starts.
func ChildMain() {
	raw := os.Getenv(EnvChild)
	if raw == "" {
		return
	}
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "fleet worker: bad %s: %v\n", EnvChild, err)
		os.Exit(2)
	}
	if err := runChild(context.Background(), cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "fleet worker %d: %v\n", cfg.Index, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// runChild opens the store, says "ready", waits for "go <start>", serves
// its sessions until start+warm-up+window, and prints "report <JSON>".
func runChild(ctx context.Context, cc childConfig, in io.Reader, out io.Writer) error {
	cfg := cc.Config
	if cfg.River {
		return runRiverChild(ctx, cc, in, out)
	}
	c := &counters{}
	store, err := cfg.Backend.open(ctx, c)
	if err != nil {
		return err
	}
	defer store.Close()
	p := newProcess(cfg, cc.Index, store, c)
	fmt.Fprintln(out, "ready")
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil {
		return fmt.Errorf("wait for go: %w", err)
	}
	var startNS int64
	if _, err := fmt.Sscanf(line, "go %d", &startNS); err != nil {
		return fmt.Errorf("bad go line %q: %w", line, err)
	}
	start := time.Unix(0, startNS)
	p.from = start.Add(cfg.Warmup)
	p.to = p.from.Add(cfg.Duration)
	stop := make(chan struct{})
	var (
		before, after Counters
		cpu           time.Duration
		wg            sync.WaitGroup
	)
	wg.Go(func() {
		time.Sleep(time.Until(p.from))
		before, cpu = c.snapshot(), selfCPU()
		time.Sleep(time.Until(p.to))
		after, cpu = c.snapshot(), selfCPU()-cpu
		close(stop)
	})
	p.serve(ctx, stop)
	wg.Wait()
	rep := childReport{
		Turns: p.turns.Load(), Runs: p.runs.Load(), AllTurns: p.allTurns.Load(), CPU: cpu,
		Latencies: p.latencies, Store: after.sub(before),
		Conflicts: p.conflicts.Load(), Retried: p.retried.Load(), Failures: p.failures.Load(),
		Errors: p.firstErrs,
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "report %s\n", raw)
	return nil
}

// child is a started worker process.
type child struct{ *childproc.Child }

func startChild(launch Launcher, cfg childConfig) (*child, error) {
	c, err := childproc.Start(launch, EnvChild, cfg, 4)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return &child{c}, nil
}

func (c *child) failure() error { return c.Failure("fleet: worker process") }

// wait waits for the process to exit, successfully.
func (c *child) wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.Done():
		if c.Err() != nil {
			return c.failure()
		}
		return nil
	case <-t.C:
		return fmt.Errorf("fleet: worker process %d did not exit in %v", c.Pid(), timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// next returns the child's next line of output.
func (c *child) next(ctx context.Context, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-c.Lines:
		if !ok {
			return "", c.failure()
		}
		return line, nil
	case <-t.C:
		return "", fmt.Errorf("fleet: worker process %d: no answer in %v", c.Pid(), timeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (c *child) expect(ctx context.Context, want string, timeout time.Duration) error {
	line, err := c.next(ctx, timeout)
	if err != nil {
		return err
	}
	if line != want {
		return fmt.Errorf("fleet: worker process %d said %q, want %q", c.Pid(), line, want)
	}
	return nil
}

func (c *child) report(ctx context.Context, timeout time.Duration) (*childReport, error) {
	line, err := c.next(ctx, timeout)
	if err != nil {
		return nil, err
	}
	raw, ok := strings.CutPrefix(line, "report ")
	if !ok {
		return nil, fmt.Errorf("fleet: worker process %d said %q, want its report", c.Pid(), line)
	}
	var rep childReport
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		return nil, fmt.Errorf("fleet: worker process %d: %w", c.Pid(), err)
	}
	if err := c.Stdin.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return nil, err
	}
	return &rep, nil
}
