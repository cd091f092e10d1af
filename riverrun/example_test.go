package riverrun_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/session/sqlite"
)

// Example runs a run as a River job on SQLite: it pauses for approval,
// the approval enqueues its resume, and a worker finishes it. Workers and
// deciders may be other processes; on PostgreSQL, riverpgxv5 replaces
// riversqlite and nothing else changes.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "riverrun-example")
	defer os.RemoveAll(dir)

	// turnkit's sessions and checkpoints (sqlite.Open migrates them), and
	// River's tables, which River's own migrations create: riverrun does not.
	store, _ := sqlite.Open(filepath.Join(dir, "turnkit.db"))
	defer store.Close()
	db, _ := sql.Open("sqlite", filepath.Join(dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	defer db.Close()
	db.SetMaxOpenConns(1)
	driver := riversqlite.New(db)
	migrator, _ := rivermigrate.New(driver, &rivermigrate.Config{Logger: quietLogger()})
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		fmt.Println(err)
		return
	}

	// The worker: the production chain, and the agents by name.
	cp := checkpoint.New(store, checkpoint.WithSession(store))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		cp.Middleware(),
		approval.Require(approval.ByTool("refund")),
	))
	workers := river.NewWorkers()
	river.AddWorker(workers, riverrun.NewWorker(runner, cp, riverrun.NewRegistry(refundAgent())))
	rc, err := river.NewClient(driver, &river.Config{
		Logger: quietLogger(), Workers: workers,
		FetchCooldown: 10 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	events, stop := rc.Subscribe(river.EventKindJobCompleted)
	defer stop()
	_ = rc.Start(ctx)
	defer rc.Stop(ctx)

	runs := riverrun.NewClient(rc, store)
	_, _ = runs.Enqueue(ctx, riverrun.Start{RunID: "refund-1", Agent: "refunds", SessionID: "customer-1", Text: "Refund INV-7."}, nil)

	out := next(events)
	fmt.Println(out.Status, out.Pending[0].Tool, out.Pending[0].Arguments)

	pending, _ := runs.Pending(ctx, "refund-1") // in any process
	_, _ = runs.Decide(ctx, "refund-1", riverrun.Approve(pending[0].CallID))

	out = next(events)
	fmt.Println(out.Status+":", out.FinalOutput)
	// Output:
	// interrupted refund {"invoice":"INV-7"}
	// finished: Refunded INV-7.
}

// next returns the output of the next completed job.
func next(events <-chan *river.Event) riverrun.Output {
	ev := <-events
	out, _, _ := riverrun.OutputOf(ev.Job.Metadata)
	return out
}

func refundAgent() *pipeline.Agent {
	refund := pipeline.NewTool(pipeline.ToolSpec{
		Name: "refund", Description: "Refunds an invoice.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"invoice":{"type":"string"}},"required":["invoice"]}`),
	}, func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Invoice string }
		err := json.Unmarshal(args, &in)
		return "Refunded " + in.Invoice + ".", err
	})
	// The model answers by the run's items: once the refund's output is
	// in, with its text; before, with the call.
	model := scripted.Rules(
		scripted.On(scripted.AfterOutput("Refunded INV-7."), scripted.Reply("Refunded INV-7.")),
		scripted.On(nil, scripted.CallTool("refund", `{"invoice":"INV-7"}`)),
	)
	return &pipeline.Agent{Name: "refunds", Model: model, Tools: []pipeline.Tool{refund}}
}
