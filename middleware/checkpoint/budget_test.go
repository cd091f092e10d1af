package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// A run that reaches its budget stops with its checkpoint saved: calls
// open, nothing of them in the session; a worker with a larger budget
// takes it over by ID, runs the calls once and finishes, and the session
// is the run's whole history.
func TestBudgetStopResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states, sessions := memstore.New(), memory.New()
	cp := checkpoint.New(states, checkpoint.WithSession(sessions))
	var runs atomic.Int32
	work := pipeline.NewTool(pipeline.ToolSpec{Name: "work"}, func(context.Context, json.RawMessage) (string, error) {
		runs.Add(1)
		return "worked", nil
	})
	used := state.Usage{InputTokens: 10, OutputTokens: 60}
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{work}, Model: scripted.New(
		scripted.CallTool("work", `{}`).WithUsage(used),
		scripted.CallTool("work", `{}`).WithUsage(used),
		scripted.Reply("done").WithUsage(used),
	)}
	runner := func(b pipeline.Budget) *pipeline.Runner {
		return pipeline.NewRunner(pipeline.WithBudget(b), pipeline.WithMiddleware(
			cp.Middleware(),
		))
	}
	_, err := runner(pipeline.Budget{OutputTokens: 100}).Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithRunID("r1"), pipeline.WithSessionID("s1"))
	if !errors.Is(err, pipeline.ErrBudgetExceeded) {
		t.Fatalf("err = %v, want the budget error", err)
	}
	saved, err := states.Load(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if u := saved.Usage(); u.OutputTokens != 120 || runs.Load() != 1 {
		t.Fatalf("checkpoint usage %+v after %d tool runs, want 120 output tokens after 1", u, runs.Load())
	}
	items, err := sessions.List(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 { // input, the first call and its output; nothing of the open call
		t.Fatalf("session holds %d items before the resume, want 3", len(items))
	}

	res, err := cp.Resume(ctx, runner(pipeline.Budget{OutputTokens: 1000}), agent, "r1")
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("resume = %q, %v", res.FinalOutput(), err)
	}
	if runs.Load() != 2 {
		t.Errorf("the tool ran %d times, want 2", runs.Load())
	}
	items, err = sessions.List(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 6 { // input, two calls and outputs, the answer
		t.Errorf("session holds %d items, want 6", len(items))
	}
}
