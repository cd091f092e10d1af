package checkpoint_test

import (
	"context"
	"errors"
	"testing"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestDeleteFinished: under DeleteFinished a run's checkpoint stays while
// the run waits for approval and goes once the run finished with its final
// commit in the session; under the default it stays.
func TestDeleteFinished(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []checkpoint.Option
		kept bool
	}{
		{"default", nil, true},
		{"KeepAll", []checkpoint.Option{checkpoint.WithRetention(checkpoint.KeepAll)}, true},
		{"DeleteFinished", []checkpoint.Option{checkpoint.WithRetention(checkpoint.DeleteFinished)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld()
			p := newProcess(t, w, "p0", true, withCheckpointOptions(tt.opts...))
			res, err := p.runner.Run(ctx, p.agent, pipeline.UserInput("Pay invoice 7."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
			if err != nil || !res.Interrupted() {
				t.Fatalf("run = %v, interrupted %v; want a pause", err, res.Interrupted())
			}
			run, err := w.states.Load(ctx, runID)
			if err != nil {
				t.Fatalf("the paused run's checkpoint: %v", err)
			}
			if err := run.Approve(res.Interruptions()[0].CallID); err != nil {
				t.Fatal(err)
			}
			if _, err := p.runner.Resume(ctx, p.agent, run); err != nil {
				t.Fatal(err)
			}
			if got := checkSession(t, w); len(got) == 0 || got[len(got)-1] != finalAnswer {
				t.Fatalf("session messages %q, want the final answer last", got)
			}
			_, err = w.states.Load(ctx, runID)
			if kept := err == nil; kept != tt.kept {
				t.Fatalf("Load after the run finished = %v; want kept %v", err, tt.kept)
			}
			if !tt.kept && !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("Load = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestDeleteFinishedKeepsUnfinished: a worker that dies before the run
// finished leaves its checkpoint, which another worker resumes; that one
// finishes the run and deletes it.
func TestDeleteFinishedKeepsUnfinished(t *testing.T) {
	ctx := context.Background()
	w := newWorld()
	opts := []checkpoint.Option{checkpoint.WithRetention(checkpoint.DeleteFinished)}
	pauseAtTransfer(t, w, true)
	p := newProcess(t, w, "p1", true, withCheckpointOptions(opts...))
	p.afterAppend = func(p *process, items []state.Item) {
		for _, it := range items {
			if it.Kind().IsOutput() && it.Name() == "pay" {
				p.crash() // before the final answer's commit
			}
		}
	}
	if _, err := resumeByID(ctx, p); !errors.Is(err, errCrashed) {
		t.Fatalf("resume on a worker that dies = %v, want the crash", err)
	}
	if _, err := w.states.Load(ctx, runID); err != nil {
		t.Fatalf("the checkpoint of a run a crash cut short: %v; want it kept", err)
	}
	q := newProcess(t, w, "p2", true, withCheckpointOptions(opts...))
	if _, err := resumeByID(ctx, q); err != nil {
		t.Fatalf("resume on another worker: %v", err)
	}
	if got := checkSession(t, w); len(got) == 0 || got[len(got)-1] != finalAnswer {
		t.Fatalf("session messages %q, want the final answer last", got)
	}
	if _, err := w.states.Load(ctx, runID); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Load after the run finished = %v, want ErrNotFound", err)
	}
}
