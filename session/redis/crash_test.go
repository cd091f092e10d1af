package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

var errCrashed = errors.New("test: the worker crashed")

// A worker is one process of a crash-safe deployment over a Redis store:
// persistence over the checkpointer's session, the checkpointer, and
// approval of "transfer". Once crashed, none of its writes reach Redis.
type worker struct {
	cp      *checkpoint.Checkpointer
	runner  *pipeline.Runner
	agent   *pipeline.Agent
	crashed atomic.Bool
	// crashAfter, if set, is called after each append that landed and
	// reports whether the worker dies right then.
	crashAfter func(items []state.Item) bool
}

type crashStates struct {
	*redis.Store
	w *worker
}

func (s crashStates) Save(ctx context.Context, run *state.Run) error {
	if s.w.crashed.Load() {
		return errCrashed
	}
	return s.Store.Save(ctx, run)
}

type crashSessions struct {
	*redis.Store
	w *worker
}

func (s crashSessions) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if s.w.crashed.Load() {
		return errCrashed
	}
	if err := s.Store.Append(ctx, sessionID, runID, items); err != nil {
		return err
	}
	if s.w.crashAfter != nil && s.w.crashAfter(items) {
		s.w.crashed.Store(true)
		return errCrashed
	}
	return nil
}

// effects counts the executions of each tool, as the outside world sees
// them, by idempotency key.
type effects struct{ n map[string]*atomic.Int64 }

func (e effects) tool(name string) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name, Description: "Moves money."},
		func(context.Context, json.RawMessage) (string, error) {
			e.n[name].Add(1)
			return name + " done", nil
		})
}

func newWorker(t *testing.T, client goredis.UniversalClient, prefix string, fx effects, steps ...scripted.Step) *worker {
	w := &worker{}
	store := newStore(t, client, redis.WithPrefix(prefix))
	var sessions session.Store = crashSessions{store, w}
	w.cp = checkpoint.New(crashStates{store, w}, checkpoint.WithSession(sessions))
	w.runner = pipeline.NewRunner(pipeline.WithMiddleware(
		w.cp.Middleware(),
		approval.Require(approval.ByTool("transfer")),
	))
	w.agent = &pipeline.Agent{
		Name:  "bank",
		Model: scripted.New(steps...),
		Tools: []pipeline.Tool{fx.tool("transfer"), fx.tool("pay")},
	}
	return w
}

// TestCrashSafeRun runs a crash-safe run on Redis: a worker pauses for
// approval; after the decision a second worker resumes it and dies right
// after committing the payment's output; a third finishes it. Every tool
// ran once, the session is valid model input with nothing twice, and the
// checkpoint is finished.
func TestCrashSafeRun(t *testing.T) {
	forEachServer(t, func(t *testing.T, client goredis.UniversalClient, prefix string) {
		ctx := t.Context()
		const runID, sessionID = "run-{crash}", "user-{42}"
		fx := effects{n: map[string]*atomic.Int64{"transfer": {}, "pay": {}}}
		store := newStore(t, client, redis.WithPrefix(prefix))

		w1 := newWorker(t, client, prefix, fx, scripted.CallTool("transfer", `{"amount":100}`))
		res, err := w1.runner.Run(ctx, w1.agent, pipeline.UserInput("Pay invoice 7."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
		must(t, err)
		if !res.Interrupted() {
			t.Fatal("the run did not pause for the transfer")
		}
		run, err := store.Load(ctx, runID)
		must(t, err)
		must(t, run.Approve(run.Pending()[0].CallID))
		must(t, store.Save(ctx, run))

		w2 := newWorker(t, client, prefix, fx,
			scripted.Respond(scripted.Text("Transferred; now paying."), scripted.Call("pay", `{"invoice":7}`)))
		w2.crashAfter = func(items []state.Item) bool {
			for _, it := range items {
				if it.Kind().IsOutput() && it.Name() == "pay" {
					return true
				}
			}
			return false
		}
		if _, err := w2.cp.Resume(ctx, w2.runner, w2.agent, runID); !errors.Is(err, errCrashed) {
			t.Fatalf("the second worker returned %v, want it to crash", err)
		}

		w3 := newWorker(t, client, prefix, fx, scripted.Reply("All paid."))
		res, err = w3.cp.Resume(ctx, w3.runner, w3.agent, runID)
		must(t, err)
		if res.FinalOutput() != "All paid." {
			t.Fatalf("final output %q", res.FinalOutput())
		}
		for name, n := range fx.n {
			if n.Load() != 1 {
				t.Errorf("%s ran %d times, want once", name, n.Load())
			}
		}
		items, err := store.List(ctx, sessionID, 0)
		must(t, err)
		open, seen := map[string]bool{}, map[string]bool{}
		var messages []string
		for i, it := range items {
			raw := string(it.Raw())
			if seen[raw] {
				t.Errorf("session item %d (%s) is stored twice", i, it)
			}
			seen[raw] = true
			switch {
			case it.Kind().IsCall():
				open[it.CallID()] = true
			case it.Kind().IsOutput():
				if !open[it.CallID()] {
					t.Errorf("session item %d: output of %s before its call", i, it.CallID())
				}
				delete(open, it.CallID())
			case it.Kind() == state.KindAssistantMessage:
				messages = append(messages, it.Text())
			}
		}
		if len(open) != 0 || len(messages) != 2 || messages[1] != "All paid." {
			t.Errorf("session: calls without output %v, messages %q", open, messages)
		}
		run, err = store.Load(ctx, runID)
		must(t, err)
		if out, done := run.FinalOutput(); !done || out != "All paid." {
			t.Errorf("checkpoint: final %q, finished %v", out, done)
		}
	})
}
