package inspect

import (
	"errors"
	"strconv"
)

// Errors of the inspector's writes.
var (
	// ErrReadOnly means a write reached a handler made without
	// [WithWrites].
	ErrReadOnly = errors.New("inspect: writes are disabled")
	// ErrUnauthorized means the authorization hook refused a write. It is
	// wrapped by [*WriteError], with the hook's error.
	ErrUnauthorized = errors.New("inspect: write not authorized")
	// ErrCSRF means a write came without the form's token, with another
	// one, or from another site.
	ErrCSRF = errors.New("inspect: cross-site request refused")
)

// A WriteError reports a write that failed: Op is "authorize", "approve"
// or "reject", with the run and call it concerned. Err wraps
// [ErrUnauthorized], or the store's, the run's or the decision hook's
// error (such as [state.ErrConflict] for a call already decided).
type WriteError struct {
	Op     string
	RunID  string
	CallID string
	Err    error
}

// Error says what failed, where, and why.
func (e *WriteError) Error() string {
	s := "inspect: " + e.Op
	if e.RunID != "" {
		s += " run " + strconv.Quote(e.RunID)
	}
	if e.CallID != "" {
		s += " call " + strconv.Quote(e.CallID)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *WriteError) Unwrap() error { return e.Err }
