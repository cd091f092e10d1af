package persistence

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors of the persistence middleware; match them with errors.Is. The
// typed errors below wrap them beside the store's error and say which
// session, run and position.
var (
	// ErrAppend means a session append failed. It is wrapped by
	// [*AppendError].
	ErrAppend = errors.New("persistence: session append failed")
	// ErrLoad means a session read failed. It is wrapped by [*LoadError].
	ErrLoad = errors.New("persistence: session read failed")
	// ErrState means the persistence bookkeeping in a run's state cannot
	// be read. It is wrapped by [*StateError].
	ErrState = errors.New("persistence: unreadable state extension")
	// ErrMark means the marks of a finished run could not be written. It
	// is wrapped by [*MarkError].
	ErrMark = errors.New("persistence: session marks not written")
)

// An AppendError reports a session append that failed. The run's state is
// still complete: the tool results, approvals, guardrail results and usage
// of the turn were recorded in it before the append, so the state the
// failed run returns is resumable, and resuming it appends what the
// session is missing, once (appends are idempotent on run ID and Seq).
//
// The runner returns it inside a [*pipeline.RunError], so the state travels
// with it: [pipeline.StateOf] finds a detached copy of the state from the
// error alone, wherever it was passed up to.
//
// When the failed append was the last commit of a turn that ended the run
// (a final output or a handoff), resume completes the commit and replays
// the turn's decision without calling the model again.
type AppendError struct {
	SessionID string
	RunID     string
	// Seq is the position of the first item of the failed append.
	Seq int64
	Err error
}

// Error names the session, the run, the first position and the store's error.
func (e *AppendError) Error() string {
	return "persistence: append session " + strconv.Quote(e.SessionID) + " run " + e.RunID +
		" at seq " + strconv.FormatInt(e.Seq, 10) + ": " + e.Err.Error()
}

// Unwrap returns [ErrAppend] and the store's error.
func (e *AppendError) Unwrap() []error { return []error{ErrAppend, e.Err} }

// A LoadError reports a store read that failed: the session history on a
// run's first turn, or the lookup of a call's output before an approved
// call runs on resume. Seq is the position looked up, 0 for the history.
// The run stops before anything runs, so a retry is safe.
type LoadError struct {
	SessionID string
	RunID     string
	Seq       int64
	Err       error
}

// Error names the session, the run, the position looked up (if any) and the store's error.
func (e *LoadError) Error() string {
	if e.Seq == 0 {
		return fmt.Sprintf("persistence: load session %q history for run %s: %v", e.SessionID, e.RunID, e.Err)
	}
	return fmt.Sprintf("persistence: look up session %q run %s seq %d: %v", e.SessionID, e.RunID, e.Seq, e.Err)
}

// Unwrap returns [ErrLoad] and the store's error.
func (e *LoadError) Unwrap() []error { return []error{ErrLoad, e.Err} }

// A MarkError reports that the marks of a finished run (see
// [WithContinuation]) could not be written. The run finished and its
// result holds its output; only the next run's continuation is lost: it
// reads the history as it would without the option (the marks are checked
// against the session, so a missing or stale mark never gives a wrong
// history).
type MarkError struct {
	SessionID string
	RunID     string
	Err       error
}

// Error says what failed, where, and why.
func (e *MarkError) Error() string {
	return fmt.Sprintf("persistence: record where session %q stands after run %s: %v", e.SessionID, e.RunID, e.Err)
}

// Unwrap returns [ErrMark] and the cause.
func (e *MarkError) Unwrap() []error { return []error{ErrMark, e.Err} }

// A StateError reports persistence bookkeeping in a run's state that cannot
// be read (a checkpoint edited by hand, or written by a newer version).
type StateError struct {
	RunID string
	Err   error
}

// Error names the run, the state extension and the cause.
func (e *StateError) Error() string {
	return "persistence: run " + e.RunID + " state extension " + strconv.Quote(extensionKey) + ": " + e.Err.Error()
}

// Unwrap returns [ErrState] and the cause.
func (e *StateError) Unwrap() []error { return []error{ErrState, e.Err} }
