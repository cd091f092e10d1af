package checkpoint_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestErrorKindsMatchSentinels: each typed error matches its sentinel (a
// finished run also the core's ErrNothingToResume) and its cause with
// errors.Is, and errors.As finds it through a wrapper.
func TestErrorKindsMatchSentinels(t *testing.T) {
	cause := &state.StoreError{Op: "save", RunID: "r", Err: state.ErrConflict}
	tests := []struct {
		err  error
		want []error
		as   func(error) bool
	}{
		{&checkpoint.SaveError{RunID: "r", Stage: checkpoint.StageTools, Err: cause}, []error{checkpoint.ErrSave, state.ErrConflict}, asType[*checkpoint.SaveError]},
		{&checkpoint.CompleteError{RunID: "r", SessionID: "s", Err: cause}, []error{checkpoint.ErrComplete, state.ErrConflict}, asType[*checkpoint.CompleteError]},
		{&checkpoint.FinishedError{RunID: "r"}, []error{checkpoint.ErrFinished, pipeline.ErrNothingToResume}, asType[*checkpoint.FinishedError]},
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
