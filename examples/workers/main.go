// Command workers runs turnkit runs as River jobs: one invocation
// enqueues runs, others work them (any number of worker processes, on
// one machine with SQLite or on many with PostgreSQL), and approvals come
// from the command line, in yet another process.
//
//	go run ./examples/workers enqueue -n 3          # enqueue three refund requests
//	go run ./examples/workers work -idle            # work them; each pauses for approval
//	go run ./examples/workers pending               # list the calls that wait
//	go run ./examples/workers approve -run refund-2 # decide; this enqueues the resume job
//	go run ./examples/workers reject -run refund-3 -m "not eligible"
//	go run ./examples/workers work -idle            # resume and finish them
//	go run ./examples/workers status                # every run's job and output
//
// Without -idle, work runs until interrupted (Ctrl-C stops it gracefully;
// a SIGKILL is fine too: River's rescuer hands its jobs to another worker,
// which resumes them from their checkpoints).
//
// State lives in SQLite files under -dir (the default; River's tables in
// river.db, turnkit's sessions and checkpoints in turnkit.db), or in the
// PostgreSQL database at -postgres URL. It runs offline on a small
// deterministic model; with OPENAI_API_KEY set it talks to OpenAI.
//
// Logs go through one zap logger on stderr, at the level -log sets (warn
// by default): River's own (its Config.Logger is a log/slog logger, which
// zapslog backs with the zap logger's core) and the runs' (turnkit's
// logging middleware in the runner's chain).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"

	_ "modernc.org/sqlite" // database/sql driver "sqlite" for River's SQLite driver
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "workers:", err)
		os.Exit(1)
	}
}

const usage = `usage: workers [-dir DIR | -postgres URL [-schema S]] [-log LEVEL] COMMAND [flags]

commands:
  enqueue [-n N] [-prefix P]     enqueue N runs (IDs P-1 ... P-N)
  work [-idle] [-conc N]         work runs until interrupted (-idle: until none is left)
  pending                        list the calls waiting for a decision
  approve -run ID [-call ID]     approve a run's pending calls (or one)
  reject -run ID [-call ID] -m MESSAGE
  status                         list every run's latest job and output
`

// store is turnkit's store: sessions and checkpoints in one database.
type store interface {
	session.Store
	state.Store
	Close() error
}

func run(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("workers", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprint(w, usage) }
	dir := fs.String("dir", filepath.Join(os.TempDir(), "turnkit-workers"), "directory of the SQLite databases")
	pgURL := fs.String("postgres", "", "PostgreSQL URL (instead of SQLite)")
	schema := fs.String("schema", "", "PostgreSQL schema of River's and turnkit's tables (default: the search path's)")
	level := zapcore.WarnLevel
	fs.Var(&level, "log", "log level on stderr: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.Lock(os.Stderr), level))
	defer func() { _ = logger.Sync() }()
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no command")
	}
	if *pgURL != "" {
		var opts []postgres.Option
		if *schema != "" {
			opts = append(opts, postgres.WithSchema(*schema)) // creates it
		}
		st, err := postgres.Open(ctx, *pgURL, opts...)
		if err != nil {
			return err
		}
		defer st.Close()
		pool, err := pgxpool.New(ctx, *pgURL)
		if err != nil {
			return err
		}
		defer pool.Close()
		return command[pgx.Tx](ctx, w, logger, riverpgxv5.New(pool), *schema, st, fs.Args())
	}
	if err := os.MkdirAll(*dir, 0o750); err != nil {
		return err
	}
	st, err := sqlite.Open(filepath.Join(*dir, "turnkit.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	db, err := sql.Open("sqlite", filepath.Join(*dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // riversqlite's advice: one connection
	return command[*sql.Tx](ctx, w, logger, riversqlite.New(db), "", st, fs.Args())
}

// command runs one command on a River driver of either database.
func command[TTx any](ctx context.Context, w io.Writer, zl *zap.Logger, driver riverdriver.Driver[TTx], schema string, st store, args []string) error {
	logger := slog.New(zapslog.NewHandler(zl.Core(), zapslog.WithName("river"))) // River logs through zap
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger, Schema: schema})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate River's tables: %w", err)
	}
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(w)
	n := fs.Int("n", 3, "enqueue: how many runs")
	prefix := fs.String("prefix", "refund", "enqueue: run ID prefix")
	idle := fs.Bool("idle", false, "work: stop when no run is left to work")
	conc := fs.Int("conc", 4, "work: runs worked at once")
	runID := fs.String("run", "", "approve, reject: the run")
	callID := fs.String("call", "", "approve, reject: one call (default: every pending call)")
	msg := fs.String("m", "", "reject: what the model is told")
	if err := fs.Parse(rest); err != nil {
		return err
	}

	cp := checkpoint.New(st, checkpoint.WithSession(st))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(pipeline.Stack{
		Logging:    logging.Middleware(zl.Named("turnkit")), // the runs log through zap too
		Checkpoint: cp.Middleware(),
		Approval:   approval.Require(approval.ByTool("refund")),
	}.Middleware()...))
	agent := newAgent()
	workers := river.NewWorkers()
	river.AddWorker(workers, riverrun.NewWorker(runner, cp, riverrun.NewRegistry(agent)))
	cfg := &river.Config{Logger: logger, Schema: schema, Workers: workers, FetchPollInterval: 100 * time.Millisecond}
	if cmd == "work" {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *conc}}
	}
	rc, err := river.NewClient(driver, cfg)
	if err != nil {
		return err
	}
	runs := riverrun.NewClient(rc, st)

	switch cmd {
	case "enqueue":
		for i := 1; i <= *n; i++ {
			id := fmt.Sprintf("%s-%d", *prefix, i)
			res, err := runs.Enqueue(ctx, riverrun.Start{
				RunID: id, Agent: agent.Name, SessionID: "customer-" + id,
				Text: fmt.Sprintf("Please refund invoice INV-%03d.", i),
			}, nil)
			if err != nil {
				return err
			}
			what := "enqueued"
			if res.UniqueSkippedAsDuplicate {
				what = "already enqueued"
			}
			fmt.Fprintf(w, "%s %s (job %d)\n", what, id, res.Job.ID)
		}
		return nil
	case "work":
		return work(ctx, w, rc, *idle)
	case "pending":
		return pending(ctx, w, runs)
	case "approve", "reject":
		if *runID == "" {
			return fmt.Errorf("%s: give -run", cmd)
		}
		return decide(ctx, w, runs, *runID, *callID, cmd == "approve", *msg)
	case "status":
		return status(ctx, w, rc)
	}
	fmt.Fprint(w, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// work works runs until ctx is done or, with idle, until no run is left.
func work[TTx any](ctx context.Context, w io.Writer, rc *river.Client[TTx], idle bool) error {
	events, cancel := rc.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled, river.EventKindJobFailed)
	defer cancel()
	if err := rc.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintln(w, "working; Ctrl-C stops")
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case ev := <-events:
			out, _, _ := riverrun.OutputOf(ev.Job.Metadata)
			fmt.Fprintf(w, "job %d %s: run %s %s%s\n", ev.Job.ID, ev.Job.State, out.RunID, out.Status, detail(out))
		case <-tick.C:
			if !idle {
				continue
			}
			left, err := rc.JobList(ctx, river.NewJobListParams().Kinds(riverrun.Kind).
				States(rivertype.JobStateAvailable, rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled).First(1))
			if err != nil {
				return err
			}
			if len(left.Jobs) == 0 && len(events) == 0 {
				break loop
			}
		}
	}
	sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer stop()
	return rc.Stop(sctx)
}

func detail(out riverrun.Output) string {
	switch out.Status {
	case riverrun.StatusFinished:
		return ": " + out.FinalOutput
	case riverrun.StatusInterrupted:
		calls := make([]string, len(out.Pending))
		for i, p := range out.Pending {
			calls[i] = p.Tool + " " + p.Arguments + " (call " + p.CallID + ")"
		}
		return ", waiting for: " + strings.Join(calls, ", ")
	case riverrun.StatusFailed:
		return ": " + out.Error
	}
	return ""
}

// latestJobs returns the latest job of each run, in run order.
func latestJobs[TTx any](ctx context.Context, rc *river.Client[TTx]) ([]*rivertype.JobRow, error) {
	list, err := rc.JobList(ctx, river.NewJobListParams().Kinds(riverrun.Kind).First(10000))
	if err != nil {
		return nil, err
	}
	latest := map[string]*rivertype.JobRow{}
	var order []string
	for _, j := range list.Jobs {
		var a riverrun.RunArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			return nil, err
		}
		if _, ok := latest[a.RunID]; !ok {
			order = append(order, a.RunID)
		}
		latest[a.RunID] = j
	}
	out := make([]*rivertype.JobRow, len(order))
	for i, id := range order {
		out[i] = latest[id]
	}
	return out, nil
}

func pending[TTx any](ctx context.Context, w io.Writer, runs *riverrun.Client[TTx]) error {
	jobs, err := latestJobs(ctx, runs.River())
	if err != nil {
		return err
	}
	n := 0
	for _, j := range jobs {
		out, ok, err := riverrun.OutputOf(j.Metadata)
		if err != nil || !ok || out.Status != riverrun.StatusInterrupted {
			continue
		}
		calls, err := runs.Pending(ctx, out.RunID) // the checkpoint says what still waits
		if err != nil {
			return err
		}
		for _, c := range calls {
			fmt.Fprintf(w, "%s: %s %s (call %s)\n", out.RunID, c.Tool, c.Arguments, c.CallID)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "no call waits for a decision")
	}
	return nil
}

func decide[TTx any](ctx context.Context, w io.Writer, runs *riverrun.Client[TTx], runID, callID string, approve bool, msg string) error {
	calls, err := runs.Pending(ctx, runID)
	if err != nil {
		return err
	}
	var ds []riverrun.Decision
	for _, c := range calls {
		if callID != "" && c.CallID != callID {
			continue
		}
		if approve {
			ds = append(ds, riverrun.Approve(c.CallID))
		} else {
			ds = append(ds, riverrun.Reject(c.CallID, msg))
		}
	}
	if len(ds) == 0 && callID != "" {
		ds = append(ds, riverrun.Approve(callID)) // let Decide say why not
	}
	if len(ds) == 0 {
		return fmt.Errorf("run %s waits for no decision", runID)
	}
	res, err := runs.Decide(ctx, runID, ds...)
	if err != nil {
		return err
	}
	if res == nil {
		fmt.Fprintf(w, "decided; run %s still waits for other calls\n", runID)
		return nil
	}
	fmt.Fprintf(w, "decided; run %s resumes in job %d\n", runID, res.Job.ID)
	return nil
}

func status[TTx any](ctx context.Context, w io.Writer, rc *river.Client[TTx]) error {
	jobs, err := latestJobs(ctx, rc)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		var a riverrun.RunArgs
		_ = json.Unmarshal(j.EncodedArgs, &a)
		out, _, _ := riverrun.OutputOf(j.Metadata)
		fmt.Fprintf(w, "%-12s job %-4d %-10s attempt %d %s%s\n", a.RunID, j.ID, j.State, j.Attempt, out.Status, detail(out))
	}
	return nil
}

func newAgent() *pipeline.Agent {
	lookup := pipeline.NewTool(pipeline.ToolSpec{
		Name:        "lookup_invoice",
		Description: "Looks an invoice up by its number.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"invoice":{"type":"string"}},"required":["invoice"],"additionalProperties":false}`),
		Strict:      true,
	}, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Invoice string }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return `{"invoice":"` + in.Invoice + `","amount_eur":42,"paid":true}`, nil
	})
	refund := pipeline.NewTool(pipeline.ToolSpec{
		Name:        "refund",
		Description: "Refunds an invoice. A human approves each refund.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"invoice":{"type":"string"}},"required":["invoice"],"additionalProperties":false}`),
		Strict:      true,
	}, func(ctx context.Context, args json.RawMessage) (string, error) {
		var in struct{ Invoice string }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		// A real refund passes the call's idempotency key to the payment
		// provider, so a retry after a crash refunds once.
		return "refunded " + in.Invoice + " (simulated)", nil
	})
	return &pipeline.Agent{
		Name:         "refunds",
		Instructions: "You handle refund requests: look the invoice up, then refund it. A human approves each refund.",
		Model:        exmodel.Or(pipeline.ModelFunc(offlineModel)),
		Settings:     exmodel.Settings(),
		Tools:        []pipeline.Tool{lookup, refund},
	}
}

// offlineModel stands in for a real model: it reads the history it is
// given, so any worker continues where another stopped.
func offlineModel(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	in := c.Input
	last := in.At(in.Len() - 1)
	if last.Kind() == state.KindUserMessage {
		invoice := "INV-000"
		if i := strings.Index(last.Text(), "INV-"); i >= 0 {
			invoice = strings.TrimSuffix(last.Text()[i:], ".")
		}
		args := `{"invoice":"` + invoice + `"}`
		return &pipeline.ModelResponse{Items: []state.Item{
			state.ToolCall("fc_1", "call_lookup", "lookup_invoice", args),
			state.ToolCall("fc_2", "call_refund", "refund", args),
		}}, nil
	}
	text := "Done: " + last.Text() + "."
	if !strings.HasPrefix(last.Text(), "refunded") {
		text = "I did not refund it: " + last.Text()
	}
	return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_1", text)}}, nil
}
