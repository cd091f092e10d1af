package persistence_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/session"
)

// TestErrorKindsMatchSentinels: each typed error matches its sentinel and
// the store's error with errors.Is, and errors.As finds it through a
// wrapper.
func TestErrorKindsMatchSentinels(t *testing.T) {
	cause := fmt.Errorf("store: %w", session.ErrClosed)
	tests := []struct {
		err      error
		sentinel error
		as       func(error) bool
	}{
		{&persistence.AppendError{SessionID: "s", RunID: "r", Seq: 3, Err: cause}, persistence.ErrAppend, asType[*persistence.AppendError]},
		{&persistence.LoadError{SessionID: "s", RunID: "r", Err: cause}, persistence.ErrLoad, asType[*persistence.LoadError]},
		{&persistence.StateError{RunID: "r", Err: cause}, persistence.ErrState, asType[*persistence.StateError]},
	}
	for _, tt := range tests {
		wrapped := fmt.Errorf("outer: %w", tt.err)
		if !errors.Is(wrapped, tt.sentinel) || !errors.Is(wrapped, session.ErrClosed) {
			t.Errorf("%T: errors.Is(%v) = %v, errors.Is(cause) = %v; want both", tt.err, tt.sentinel,
				errors.Is(wrapped, tt.sentinel), errors.Is(wrapped, session.ErrClosed))
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
