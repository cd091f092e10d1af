package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state/memstore"
)

func deleteTool() pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: "delete_files", Description: "Deletes files."},
		func(context.Context, json.RawMessage) (string, error) { return "deleted 3 files", nil })
}

// The checkpointer goes right inside persistence, and wraps the session
// store persistence writes to. The run's checkpoint is in the store from
// its first turn on, and up to date when it returns.
func ExampleNew() {
	ctx := context.Background()
	states := memstore.New() // session/sqlite, session/postgres and session/redis are state stores too
	cp := checkpoint.New(states, checkpoint.WithSession(memory.New()))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		cp.Middleware(),
	))
	agent := &pipeline.Agent{
		Name:  "janitor",
		Model: scripted.New(scripted.CallTool("delete_files", `{}`), scripted.Reply("Freed 3 files.")),
		Tools: []pipeline.Tool{deleteTool()},
	}
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("Free some space."), pipeline.WithRunID("run-1"), pipeline.WithSessionID("user-42")); err != nil {
		fmt.Println(err)
		return
	}
	run, _ := states.Load(ctx, "run-1")
	out, finished := run.FinalOutput()
	fmt.Printf("checkpoint: %d items, finished %v: %s\n", run.Len(), finished, out)
	// Output:
	// checkpoint: 4 items, finished true: Freed 3 files.
}

// Stateless workers: one starts a run, which pauses for approval; a human's
// decision is saved on the checkpoint; any worker resumes the run by ID.
// Resuming a finished run returns a FinishedError (after completing its
// final commit, if a crash lost it).
func ExampleCheckpointer_Resume() {
	ctx := context.Background()
	states, sessions := memstore.New(), memory.New()
	cp := checkpoint.New(states, checkpoint.WithSession(sessions))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		cp.Middleware(),
		approval.Require(approval.ByTool("delete_files")),
	))
	agent := &pipeline.Agent{
		Name:  "janitor",
		Model: scripted.New(scripted.CallTool("delete_files", `{}`), scripted.Reply("Freed 3 files.")),
		Tools: []pipeline.Tool{deleteTool()},
	}

	// Worker 1 starts the run; it pauses.
	res, _ := runner.Run(ctx, agent, pipeline.UserInput("Free some space."), pipeline.WithRunID("run-1"), pipeline.WithSessionID("user-42"))
	fmt.Println("paused:", res.Interrupted())

	// An API records the human's decision on the checkpoint.
	run, _ := states.Load(ctx, "run-1")
	_ = run.Approve(run.Pending()[0].CallID)
	_ = states.Save(ctx, run)

	// Worker 2 resumes the run by ID.
	res, err := cp.Resume(ctx, runner, agent, "run-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("final:", res.FinalOutput())

	// A duplicate job for the same run finds it finished.
	_, err = cp.Resume(ctx, runner, agent, "run-1")
	if fe, ok := errors.AsType[*checkpoint.FinishedError](err); ok {
		fmt.Println("already finished:", fe.FinalOutput)
	}
	items, _ := sessions.List(ctx, "user-42", 0)
	fmt.Println("session items:", len(items))
	// Output:
	// paused: true
	// final: Freed 3 files.
	// already finished: Freed 3 files.
	// session items: 4
}
