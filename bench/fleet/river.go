package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/state"
)

// riverSchema is the schema of River's tables in River mode.
func (b Backend) riverSchema() string { return b.Schema + "_river" }

// setupRiver makes River's schema afresh and runs River's migrations in
// it.
func setupRiver(ctx context.Context, be Backend) error {
	if be.Name != Postgres {
		return fmt.Errorf("fleet: River mode runs on %s only, not %s", Postgres, be.Name)
	}
	if err := dropRiver(ctx, be); err != nil {
		return fmt.Errorf("fleet: drop River's schema: %w", err)
	}
	pool, err := pgxpool.New(ctx, be.PostgresURL)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{be.riverSchema()}.Sanitize()); err != nil {
		return fmt.Errorf("fleet: create River's schema: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: be.riverSchema(), Logger: quietLogger()})
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("fleet: River's migrations: %w", err)
	}
	return nil
}

// dropRiver drops River's schema.
func dropRiver(ctx context.Context, be Backend) error {
	conn, err := pgx.Connect(ctx, be.PostgresURL)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{be.riverSchema()}.Sanitize()+" CASCADE")
	return err
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// runArgs are the job arguments of run k of session s.
func runArgs(s, k int) riverrun.RunArgs {
	in := state.UserMessage("question " + strconv.Itoa(k))
	return riverrun.RunArgs{
		RunID: fmt.Sprintf(runIDFormat, s, k), Agent: agentName, SessionID: (*process)(nil).sessionID(s),
		Input: []riverrun.InputItem{{Kind: in.Kind(), Raw: string(in.Raw())}},
	}
}

// agentName is the simulation's agent, in the workers' riverrun.Registry.
const agentName = "fleet"

// enqueueFirst enqueues the first run of every session, with an
// insert-only River client.
func enqueueFirst(ctx context.Context, cfg Config) error {
	pool, err := pgxpool.New(ctx, cfg.Backend.PostgresURL)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer pool.Close()
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: cfg.Backend.riverSchema(), Logger: quietLogger()})
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	params := make([]river.InsertManyParams, cfg.Sessions)
	for s := range params {
		params[s] = river.InsertManyParams{Args: runArgs(s, 0)}
	}
	if _, err := rc.InsertMany(ctx, params); err != nil {
		return fmt.Errorf("fleet: enqueue the sessions' first runs: %w", err)
	}
	return nil
}

// marksKey is the context key of a job's model call marks.
type marksKey struct{}

// riverWorker works the simulation's jobs with riverrun's worker and
// measures them as [process.run] does: it gives the scripted model a
// fresh list of marks through the job's context, counts the run, and
// enqueues the session's next run unless River retries this one or the
// window is over.
type riverWorker struct {
	river.WorkerDefaults[riverrun.RunArgs]
	inner   *riverrun.Worker
	p       *process
	rc      *river.Client[pgx.Tx]
	stopped atomic.Bool
}

func (w *riverWorker) Timeout(job *river.Job[riverrun.RunArgs]) time.Duration {
	return w.inner.Timeout(job)
}

func (w *riverWorker) Work(ctx context.Context, job *river.Job[riverrun.RunArgs]) error {
	var marks []time.Time
	err := w.inner.Work(context.WithValue(ctx, marksKey{}, &marks), job)
	end := time.Now()
	retry := false
	switch {
	case err == nil:
		if job.Attempt > 1 {
			w.p.retried.Add(1)
		}
		w.p.record(marks, end)
	case errors.Is(err, state.ErrConflict):
		w.p.conflicts.Add(1)
		retry = true
	default:
		w.p.fail(err)
		if jerr, ok := errors.AsType[*riverrun.JobError](err); ok {
			retry = jerr.Retry
		}
	}
	if retry || w.stopped.Load() {
		return err
	}
	var s, k int
	if _, serr := fmt.Sscanf(job.Args.RunID, runIDFormat, &s, &k); serr != nil {
		return errors.Join(err, fmt.Errorf("fleet: run ID %q: %w", job.Args.RunID, serr))
	}
	if _, ierr := w.rc.Insert(ctx, runArgs(s, k+1), nil); ierr != nil {
		w.p.fail(ierr)
		return errors.Join(err, ierr)
	}
	return err
}

// runRiverChild is runChild in River mode: it opens the store and a River
// client on its own connection pool (River's queries counted apart),
// says "ready", waits for "go <start>", starts the client, works jobs
// until start+warm-up+window, stops the client (the jobs in progress
// end) and prints "report <JSON>".
func runRiverChild(ctx context.Context, cc childConfig, in io.Reader, out io.Writer) error {
	cfg := cc.Config
	c := &counters{}
	store, err := cfg.Backend.open(ctx, c)
	if err != nil {
		return err
	}
	defer store.Close()
	p := newProcess(cfg, cc.Index, store, c)
	agent := *p.agent
	agent.Name = agentName
	agent.Model = pipeline.ModelFunc(func(ctx context.Context, call *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		marks, ok := ctx.Value(marksKey{}).(*[]time.Time)
		if !ok {
			return nil, errors.New("fleet: the model's context lost the job's marks")
		}
		*marks = append(*marks, time.Now())
		return p.answer(ctx, call, len(*marks))
	})
	pcfg, err := pgxpool.ParseConfig(cfg.Backend.PostgresURL)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	pcfg.ConnConfig.Tracer = pgTracer{&c.queueRoundTrips}
	pcfg.ConnConfig.RuntimeParams["application_name"] = appName
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer pool.Close()
	w := &riverWorker{inner: riverrun.NewWorker(p.runner, p.cp, riverrun.NewRegistry(&agent)), p: p}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	w.rc, err = river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema: cfg.Backend.riverSchema(), Logger: quietLogger(), Workers: workers,
		// Every process may take every session's run; the sessions'
		// chains keep the runs in progress at Sessions.
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Sessions}},
		// As bench/cmd/riverbench: pick a new job up within 5 ms of its
		// insert's notification, and poll every 50 ms besides.
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
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
	// River starts once the window is known, early in the warm-up.
	if err := w.rc.Start(ctx); err != nil {
		return fmt.Errorf("fleet: start River: %w", err)
	}
	stopRiver := func() error {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return w.rc.Stop(sctx)
	}
	time.Sleep(time.Until(p.from))
	before, cpu := c.snapshot(), selfCPU()
	time.Sleep(time.Until(p.to))
	after, cpu := c.snapshot(), selfCPU()-cpu
	w.stopped.Store(true)
	if err := stopRiver(); err != nil {
		return fmt.Errorf("fleet: stop River: %w", err)
	}
	p.mu.Lock()
	rep := childReport{
		Turns: p.turns.Load(), Runs: p.runs.Load(), AllTurns: p.allTurns.Load(), CPU: cpu,
		Latencies: p.latencies, Store: after.sub(before),
		Conflicts: p.conflicts.Load(), Retried: p.retried.Load(), Failures: p.failures.Load(),
		Errors: p.firstErrs,
	}
	p.mu.Unlock()
	raw, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "report %s\n", raw)
	return nil
}
