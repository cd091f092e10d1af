package checkpoint_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// The crash points of the three cases the package documentation lists,
// each hit while a worker resumes the approved transfer: the transfer
// runs, then the model answers with a message and a payment, then with
// the final answer.
var crashes = []struct {
	name string
	arm  func(p *process)
}{
	{
		// Case 1: the worker dies while the payment runs (after its
		// effect, before its output is committed).
		name: "while tools run",
		arm: func(p *process) {
			p.inTool = func(p *process, c *pipeline.ToolCall) {
				if c.Name == "pay" {
					p.crash()
				}
			}
		},
	},
	{
		// Case 3: the worker dies right after the payment's commit: the
		// session holds the message, the call and its output.
		name: "after a commit, session ahead",
		arm: func(p *process) {
			p.afterAppend = func(p *process, items []state.Item) {
				for _, it := range items {
					if it.Kind().IsOutput() && it.Name() == "pay" {
						p.crash()
					}
				}
			}
		},
	},
	{
		// Case 2: the worker dies right after the final commit.
		name: "after the final commit",
		arm: func(p *process) {
			p.afterAppend = func(p *process, items []state.Item) {
				for _, it := range items {
					if it.Kind() == state.KindAssistantMessage && it.Text() == finalAnswer {
						p.crash()
					}
				}
			}
		},
	},
}

// crashAndRecover pauses the run at the transfer, resumes it on a worker
// that crashes at the armed point, then recovers it on a fresh worker. It
// returns the fresh worker and the recovery's outcome.
func crashAndRecover(t *testing.T, w *world, checkpointed bool, arm func(p *process)) (*process, *pipeline.Result, error) {
	t.Helper()
	return crashAndRecoverOn(t, w, checkpointed, func(name string) *process { return newProcess(t, w, name, checkpointed) }, arm)
}

// crashAndRecoverOn is crashAndRecover with the workers newWorker starts.
func crashAndRecoverOn(t *testing.T, w *world, checkpointed bool, newWorker func(name string) *process, arm func(p *process)) (*process, *pipeline.Result, error) {
	t.Helper()
	ctx := context.Background()
	pauseAtTransfer(t, w, checkpointed)
	p1 := newWorker("p1")
	arm(p1)
	if _, err := resumeByID(ctx, p1); !errors.Is(err, errCrashed) {
		t.Fatalf("the armed worker returned %v, want it to crash", err)
	}
	p2 := newWorker("p2")
	res, err := resumeByID(ctx, p2)
	return p2, res, err
}

// TestCrashRecovery reproduces each crash case and shows that a worker
// recovering with Checkpointer.Resume finishes the run with nothing lost
// or stored twice, every call under one idempotency key, and the model
// asked only for the turns that had no answer stored.
func TestCrashRecovery(t *testing.T) {
	wantModelCalls := map[string]int{
		"while tools run":               1, // the final answer; the payment's turn is resumed from the checkpoint
		"after a commit, session ahead": 1, // the final answer; the payment's output is found in the session
		"after the final commit":        0, // nothing: the run finished
	}
	for _, tt := range crashes {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			p2, res, err := crashAndRecover(t, w, true, tt.arm)
			switch fe, finished := errors.AsType[*checkpoint.FinishedError](err); {
			case finished:
				if fe.FinalOutput != finalAnswer || !fe.Completed {
					t.Errorf("Resume = %+v, want the final answer and the commit completed", fe)
				}
			case err != nil:
				t.Fatalf("recovery: %v", err)
			case res.FinalOutput() != finalAnswer:
				t.Fatalf("recovery final output = %q, want %q", res.FinalOutput(), finalAnswer)
			}
			if got := len(p2.model.Calls()); got != wantModelCalls[tt.name] {
				t.Errorf("the recovering worker asked the model %d times, want %d", got, wantModelCalls[tt.name])
			}
			msgs := checkSession(t, w)
			want := []string{"Transferred; now paying the invoice.", finalAnswer}
			if diff := cmp.Diff(want, msgs); diff != "" {
				t.Errorf("session messages mismatch (-want +got):\n%s", diff)
			}
			for _, tool := range []string{"transfer", "pay"} {
				if keys := w.effects.Keys(tool); len(keys) == 0 || distinct(keys) != 1 {
					t.Errorf("%s ran under keys %v, want one key", tool, keys)
				}
			}
			if n := len(w.effects.Keys("transfer")); n != 1 {
				t.Errorf("transfer ran %d times, want once", n)
			}
			run, err := w.states.Load(context.Background(), runID)
			if err != nil {
				t.Fatal(err)
			}
			last := run.Items().At(run.Items().Len() - 1).Seq()
			if out, done := run.FinalOutput(); !done || out != finalAnswer || run.SessionWatermark() != last {
				t.Errorf("checkpoint: final %q finished %v watermark %d, want %q, true, %d", out, done, run.SessionWatermark(), finalAnswer, last)
			}
			if _, ok := run.Extension("turnkit.checkpoint"); ok {
				t.Error("the checkpoint still records a final commit after it completed")
			}
		})
	}
}

// TestCrashRecoveryWithoutCheckpointer runs the same crashes on the naive
// program that saves res.State() after each Runner call, and shows each
// failure the checkpointer prevents.
func TestCrashRecoveryWithoutCheckpointer(t *testing.T) {
	t.Run("while tools run: the payment runs again under a new key", func(t *testing.T) {
		t.Parallel()
		w := newWorld()
		if _, _, err := crashAndRecover(t, w, false, crashes[0].arm); err != nil {
			t.Fatalf("recovery: %v", err)
		}
		if keys := w.effects.Keys("pay"); distinct(keys) != 2 {
			t.Errorf("pay ran under keys %v; the naive program should have used two", keys)
		}
	})
	// The session is ahead of the saved state in the two other cases: the
	// state is stale, and resuming it is refused before the model is asked
	// (without the refusal, the first failed with session.ErrConflict and
	// the second asked the model again). The run cannot go on: only a
	// checkpoint kept ahead of the session knows what the session holds.
	for _, tt := range crashes[1:] {
		t.Run(tt.name+": the stale state is refused", func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			p2, _, err := crashAndRecover(t, w, false, tt.arm)
			if !errors.Is(err, state.ErrStale) || errors.Is(err, session.ErrConflict) {
				t.Errorf("recovery = %v, want state.ErrStale", err)
			}
			if len(p2.model.Calls()) != 0 {
				t.Errorf("the stale state asked the model %d times", len(p2.model.Calls()))
			}
		})
	}
}

// TestPlainResumeRefusesFinishedRun checks the safe default: after a
// crash after the final commit, runner.Resume (without the checkpointer's
// Resume) does not ask the model again.
func TestPlainResumeRefusesFinishedRun(t *testing.T) {
	w := newWorld()
	ctx := context.Background()
	pauseAtTransfer(t, w, true)
	p1 := newProcess(t, w, "p1", true)
	crashes[2].arm(p1)
	if _, err := p1.cp.Resume(ctx, p1.runner, p1.agent, runID); !errors.Is(err, errCrashed) {
		t.Fatalf("the armed worker returned %v, want it to crash", err)
	}
	p2 := newProcess(t, w, "p2", true)
	run, err := w.states.Load(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.runner.Resume(ctx, p2.agent, run); !errors.Is(err, pipeline.ErrNothingToResume) {
		t.Errorf("runner.Resume of the crashed finished run = %v, want pipeline.ErrNothingToResume", err)
	}
	if len(p2.model.Calls()) != 0 {
		t.Errorf("the model was asked %d times", len(p2.model.Calls()))
	}
	// A second Resume after the completion finds nothing to complete.
	for i, wantCompleted := range []bool{true, false} {
		_, err := p2.cp.Resume(ctx, p2.runner, p2.agent, runID)
		fe, ok := errors.AsType[*checkpoint.FinishedError](err)
		if !ok || fe.Completed != wantCompleted {
			t.Errorf("Resume #%d = %v, want a FinishedError with Completed %v", i+1, err, wantCompleted)
		}
	}
	if diff := cmp.Diff([]string{"Transferred; now paying the invoice.", finalAnswer}, checkSession(t, w)); diff != "" {
		t.Errorf("session messages mismatch (-want +got):\n%s", diff)
	}
}

// TestCrashAfterFirstSaveKeepsHistory: a worker that dies right after a
// run's first checkpoint save, before anything else of the run is stored,
// leaves a checkpoint that resumes with the session's history: the model
// of the worker that recovers the run sees the earlier run's items before
// the run's input, as the live run's model would have. (The first save
// used to come before the history was read, so such a resume called the
// model with the input alone; the torture harness found it.)
func TestCrashAfterFirstSaveKeepsHistory(t *testing.T) {
	ctx := context.Background()
	w := newWorld()
	earlier := []state.Item{state.UserMessage("Hello.").WithSeq(1), state.AssistantMessage("msg_0", "Hi, how can I help?").WithSeq(2)}
	if err := w.sessions.Append(ctx, sessionID, "run-0", earlier); err != nil {
		t.Fatal(err)
	}
	p1 := newProcess(t, w, "p1", true)
	p1.afterSave = func(p *process, _ *state.Run) { p.crash() }
	_, err := p1.runner.Run(ctx, p1.agent, pipeline.UserInput("Pay invoice 7."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
	if !errors.Is(err, errCrashed) || p1.saves.Load() != 1 {
		t.Fatalf("run = %v after %d saves, want the crash after the first", err, p1.saves.Load())
	}

	p2 := newProcess(t, w, "p2", true)
	if _, err := p2.cp.Resume(ctx, p2.runner, p2.agent, runID); err != nil {
		t.Fatalf("recover: %v", err)
	}
	calls := p2.model.Calls()
	if len(calls) == 0 {
		t.Fatal("the recovering worker never called the model")
	}
	var got []string
	for _, it := range calls[0].Input.All() {
		got = append(got, it.Text())
	}
	if want := []string{"Hello.", "Hi, how can I help?", "Pay invoice 7."}; !cmp.Equal(got, want) {
		t.Fatalf("the recovered run's model input (-want +got):\n%s", cmp.Diff(want, got))
	}
}
