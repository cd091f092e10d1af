package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

// resumeWith resumes run on p, plainly or streamed.
func resumeWith(ctx context.Context, p *process, run *state.Run, streamed bool) error {
	if !streamed {
		_, err := p.runner.Resume(ctx, p.agent, run)
		return err
	}
	_, _, err := pipelinetest.Drain(p.runner.ResumeStream(ctx, p.agent, run))
	return err
}

// refused resumes the stale run on a fresh worker and checks the refusal:
// state.ErrStale and state.ErrConflict, a message that names the run and
// says how to load the newest state, no model call, no tool run, and the
// state unchanged.
func refused(t *testing.T, w *world, run *state.Run, streamed bool) error {
	t.Helper()
	p := newProcess(t, w, "stale", true)
	before, err := state.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	transfers, pays := len(w.effects.Keys("transfer")), len(w.effects.Keys("pay"))
	resumeErr := resumeWith(context.Background(), p, run, streamed)
	err = resumeErr
	if !errors.Is(err, state.ErrStale) || !errors.Is(err, state.ErrConflict) {
		t.Fatalf("resume of the stale state = %v, want state.ErrStale and state.ErrConflict", err)
	}
	if _, ok := errors.AsType[*state.StaleError](err); !ok {
		t.Errorf("error %v is not a *state.StaleError", err)
	}
	for _, want := range []string{runID, "went on in another state", "load the newest state", "Checkpointer.Resume"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if n := len(p.model.Calls()); n != 0 {
		t.Errorf("the stale state asked the model %d times", n)
	}
	if len(w.effects.Keys("transfer")) != transfers || len(w.effects.Keys("pay")) != pays {
		t.Error("a tool ran for the stale state")
	}
	after, err := state.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the refused resume changed the state:\n%s\n%s", before, after)
	}
	return resumeErr
}

// TestStaleSiblingRefused: with a checkpointer, two states are taken from
// one paused result; one is approved and resumed to the end; the other,
// resumed without a decision, is refused before any model call or tool.
// If the first has only claimed the run so far (nothing in the session
// yet), the second's claim loses, and that conflict is stale too.
func TestStaleSiblingRefused(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		name := "plain"
		if streamed {
			name = "streamed"
		}
		t.Run(name+"/went on", func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			p := newProcess(t, w, "p0", true)
			ctx := context.Background()
			res, err := p.runner.Run(ctx, p.agent, pipeline.UserInput("Pay invoice 7."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
			if err != nil || !res.Interrupted() {
				t.Fatalf("run = %v, interrupted %v", err, res.Interrupted())
			}
			first, second := res.State(), res.State()
			if err := first.Approve(res.Interruptions()[0].CallID); err != nil {
				t.Fatal(err)
			}
			if err := resumeWith(ctx, newProcess(t, w, "p1", true), first, streamed); err != nil {
				t.Fatalf("resume of the approved state: %v", err)
			}
			refused(t, w, second, streamed)
			if n := len(w.effects.Keys("transfer")); n != 1 {
				t.Errorf("transfer ran %d times, want once", n)
			}
			checkSession(t, w)
		})
		t.Run(name+"/claimed", func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			p := newProcess(t, w, "p0", true)
			ctx := context.Background()
			res, err := p.runner.Run(ctx, p.agent, pipeline.UserInput("Pay invoice 7."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
			if err != nil || !res.Interrupted() {
				t.Fatalf("run = %v, interrupted %v", err, res.Interrupted())
			}
			first, second := res.State(), res.State()
			if err := first.Approve(res.Interruptions()[0].CallID); err != nil {
				t.Fatal(err)
			}
			if err := w.states.Save(ctx, first); err != nil { // the first claims the run
				t.Fatal(err)
			}
			err = refused(t, w, second, streamed)
			se, ok := errors.AsType[*checkpoint.SaveError](err)
			if !ok || se.Stage != checkpoint.StageClaim {
				t.Fatalf("error %v, want a SaveError at the claim", err)
			}
			st, _ := errors.AsType[*state.StaleError](err)
			if st == nil || st.Have != second.Version() || st.Stored != first.Version() {
				t.Errorf("StaleError %+v, want versions have %d stored %d", st, second.Version(), first.Version())
			}
		})
	}
}

// TestStaleCheckpointFileRefused: a checkpoint file exported at the pause
// is resumed after the run went on from the store: it is refused before
// any model call or tool, while Checkpointer.Resume still loads the newest.
func TestStaleCheckpointFileRefused(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "streamed"}[streamed], func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			ctx := context.Background()
			pauseAtTransfer(t, w, true)
			run, err := w.states.Load(ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			file, err := state.Marshal(run) // approved, not yet resumed
			if err != nil {
				t.Fatal(err)
			}
			if _, err := resumeByID(ctx, newProcess(t, w, "p1", true)); err != nil {
				t.Fatalf("resume by ID: %v", err)
			}
			old, err := state.Unmarshal(file)
			if err != nil {
				t.Fatal(err)
			}
			refused(t, w, old, streamed)
			if n := len(w.effects.Keys("transfer")); n != 1 {
				t.Errorf("transfer ran %d times, want once", n)
			}
			if _, err := resumeByID(ctx, newProcess(t, w, "p2", true)); !errors.Is(err, pipeline.ErrNothingToResume) {
				t.Errorf("Checkpointer.Resume of the finished run = %v, want ErrNothingToResume", err)
			}
			if diff := checkSession(t, w); len(diff) != 2 {
				t.Errorf("session messages %v", diff)
			}
		})
	}
}
