package riverrun_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/state"
)

// TestErrorKindsMatchSentinels: ErrUnknownAgent refines the core's
// sentinel instead of duplicating it, and each typed error matches its
// sentinel and its cause with errors.Is, and errors.As finds it.
func TestErrorKindsMatchSentinels(t *testing.T) {
	unknown := fmt.Errorf("%w %q", riverrun.ErrUnknownAgent, "nobody") // as the worker returns it
	if !errors.Is(unknown, riverrun.ErrUnknownAgent) || !errors.Is(unknown, pipeline.ErrUnknownAgent) {
		t.Errorf("%v: errors.Is(riverrun.ErrUnknownAgent) = %v, errors.Is(pipeline.ErrUnknownAgent) = %v; want both",
			unknown, errors.Is(unknown, riverrun.ErrUnknownAgent), errors.Is(unknown, pipeline.ErrUnknownAgent))
	}
	if errors.Is(pipeline.ErrUnknownAgent, riverrun.ErrUnknownAgent) {
		t.Error("the core's sentinel matches riverrun's: the refinement runs the wrong way")
	}
	tests := []struct {
		err  error
		want []error
		as   func(error) bool
	}{
		{&riverrun.EnqueueError{RunID: "r", Err: riverrun.ErrInvalidStart}, []error{riverrun.ErrEnqueue, riverrun.ErrInvalidStart}, asType[*riverrun.EnqueueError]},
		{&riverrun.DecideError{RunID: "r", CallID: "c", Err: state.ErrAlreadyDecided}, []error{riverrun.ErrDecide, state.ErrAlreadyDecided}, asType[*riverrun.DecideError]},
		{&riverrun.EraseError{SessionID: "s", Err: riverrun.ErrJobsRunning}, []error{riverrun.ErrErase, riverrun.ErrJobsRunning}, asType[*riverrun.EraseError]},
		{&riverrun.JobError{RunID: "r", Attempt: 1, Err: unknown}, []error{riverrun.ErrJob, riverrun.ErrUnknownAgent, pipeline.ErrUnknownAgent}, asType[*riverrun.JobError]},
	}
	for _, tt := range tests {
		wrapped := fmt.Errorf("outer: %w", tt.err)
		for _, w := range tt.want {
			if !errors.Is(wrapped, w) {
				t.Errorf("%T: errors.Is(%v) = false", tt.err, w)
			}
		}
		if !tt.as(wrapped) {
			t.Errorf("%T: errors.As through a wrapper failed", tt.err)
		}
	}
}

func asType[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}
