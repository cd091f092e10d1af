package checkpoint_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
)

// payIsRetryable declares the payment retryable, as a read-only tool
// would be: the checkpointer may skip its save before the call.
var payIsRetryable = checkpoint.WithRetryableTools(func(c *pipeline.ToolCall) bool { return c.Name == "pay" })

func retryableWorker(t *testing.T, w *world) func(name string) *process {
	return func(name string) *process {
		return newProcess(t, w, name, true, withCheckpointOptions(payIsRetryable))
	}
}

// TestRetryableToolSkipsToolsSave tests that the save before a retryable
// call's response runs is skipped, and only that one: the resumed worker
// saves once fewer than without the option, and the run ends the same.
func TestRetryableToolSkipsToolsSave(t *testing.T) {
	ctx := context.Background()
	saves := map[bool]int64{}
	for _, retryable := range []bool{false, true} {
		w := newWorld()
		pauseAtTransfer(t, w, true)
		p := newProcess(t, w, "p1", true)
		if retryable {
			p = retryableWorker(t, w)("p1")
		}
		res, err := resumeByID(ctx, p)
		if err != nil || res.FinalOutput() != finalAnswer {
			t.Fatalf("retryable %v: resume = %v, %v", retryable, res, err)
		}
		if diff := cmp.Diff([]string{"Transferred; now paying the invoice.", finalAnswer}, checkSession(t, w)); diff != "" {
			t.Errorf("retryable %v: session messages mismatch (-want +got):\n%s", retryable, diff)
		}
		saves[retryable] = p.saves.Load()
	}
	if saves[true] != saves[false]-1 {
		t.Errorf("saves: %d with the payment retryable, %d without; want one fewer", saves[true], saves[false])
	}
}

// TestRetryableToolAfterCrash tests what WithRetryableTools documents for
// a crash while a retryable call runs: the checkpoint does not hold its
// response, so the recovering worker asks the model again and the call
// runs again under a new call ID, and nothing reaches the session twice.
// A crash after the call's commit loses nothing: the commit's save holds
// the response, and the call does not run again.
func TestRetryableToolAfterCrash(t *testing.T) {
	tests := []struct {
		crash      int // index in crashes
		modelCalls int
		payRuns    int
	}{
		{crash: 0, modelCalls: 2, payRuns: 2}, // while tools run: the payment's turn again, then the answer
		{crash: 1, modelCalls: 1, payRuns: 1}, // after the payment's commit: the answer only
	}
	for _, tt := range tests {
		t.Run(crashes[tt.crash].name, func(t *testing.T) {
			w := newWorld()
			p2, res, err := crashAndRecoverOn(t, w, true, retryableWorker(t, w), crashes[tt.crash].arm)
			if err != nil {
				t.Fatalf("recovery: %v", err)
			}
			if res.FinalOutput() != finalAnswer {
				t.Fatalf("recovery final output = %q, want %q", res.FinalOutput(), finalAnswer)
			}
			if got := len(p2.model.Calls()); got != tt.modelCalls {
				t.Errorf("the recovering worker asked the model %d times, want %d", got, tt.modelCalls)
			}
			if diff := cmp.Diff([]string{"Transferred; now paying the invoice.", finalAnswer}, checkSession(t, w)); diff != "" {
				t.Errorf("session messages mismatch (-want +got):\n%s", diff)
			}
			pay := w.effects.Keys("pay")
			if len(pay) != tt.payRuns || distinct(pay) != tt.payRuns {
				t.Errorf("pay ran under keys %v, want %d distinct", pay, tt.payRuns)
			}
			if n := len(w.effects.Keys("transfer")); n != 1 {
				t.Errorf("transfer ran %d times, want once", n)
			}
		})
	}
}

// TestRetryablePredicateNotForResumedCalls tests that a resumed call (the
// approved transfer) is never asked about: its response is in the
// checkpoint already.
func TestRetryablePredicateNotForResumedCalls(t *testing.T) {
	w := newWorld()
	pauseAtTransfer(t, w, true)
	var asked []string
	opt := checkpoint.WithRetryableTools(func(c *pipeline.ToolCall) bool {
		asked = append(asked, c.Name)
		return false
	})
	p := newProcess(t, w, "p1", true, withCheckpointOptions(opt))
	if _, err := resumeByID(context.Background(), p); err != nil && !errors.Is(err, errCrashed) {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pay"}, asked); diff != "" {
		t.Errorf("the predicate was asked about (-want +got):\n%s", diff)
	}
}
