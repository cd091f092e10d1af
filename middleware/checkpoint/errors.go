package checkpoint

import (
	"errors"
	"strconv"

	"github.com/turnkit/turnkit/pipeline"
)

// Errors of the checkpointer; match them with errors.Is. The typed errors
// below wrap them beside the store's error and say which run.
var (
	// ErrSave means a checkpoint save failed. It is wrapped by
	// [*SaveError].
	ErrSave = errors.New("checkpoint: save failed")
	// ErrComplete means [Checkpointer.Resume] could not complete the final
	// commit of a finished run. It is wrapped by [*CompleteError].
	ErrComplete = errors.New("checkpoint: final commit not completed")
	// ErrFinished means [Checkpointer.Resume] found the run finished. It
	// is wrapped by [*FinishedError], and wraps
	// [pipeline.ErrNothingToResume], so errors.Is matches either.
	ErrFinished error = &kindError{msg: "checkpoint: run finished", kind: pipeline.ErrNothingToResume}
)

// kindError is a sentinel that wraps another package's sentinel: it
// matches itself and the one it refines.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// A Stage names the point of a run at which the checkpointer saves.
type Stage uint8

// The points at which a [Checkpointer] saves a run.
const (
	// StageClaim is the first save of a run or a resumption, which claims
	// it before anything happens: at the start of a resumption, before an
	// approved call can run; for a new run, with its input placed, before
	// its first session append or else at the start of its first turn,
	// before the model is called. A conflict at the claim means the worker
	// never owned the run: nothing it did reached the stores.
	StageClaim Stage = iota + 1
	// StageTools is the save of a response before its tools run.
	StageTools
	// StageAppend is the save before a session append (the write-ahead).
	StageAppend
	// StageEnd is the save when the run returns: final output,
	// interruption or error.
	StageEnd
	// StageComplete is a save of [Checkpointer.Resume] completing the
	// final commit of a finished run.
	StageComplete
)

// String returns "claim", "tools", "append", "end" or "complete".
func (s Stage) String() string {
	switch s {
	case StageClaim:
		return "claim"
	case StageTools:
		return "tools"
	case StageAppend:
		return "append"
	case StageEnd:
		return "end"
	case StageComplete:
		return "complete"
	}
	return "Stage(" + strconv.Itoa(int(s)) + ")"
}

// A SaveError reports a checkpoint save that failed, and where in the run.
// Err is the store's error: when it wraps [state.ErrConflict], another
// worker saved the run first and owns it; the run stopped, and nothing it
// did after its last successful save reached the session.
type SaveError struct {
	RunID string
	Stage Stage
	Err   error
}

// Error names the run, the stage of the save and the store's error.
func (e *SaveError) Error() string {
	return "checkpoint: save run " + e.RunID + " (" + e.Stage.String() + "): " + e.Err.Error()
}

// Unwrap returns [ErrSave] and the store's error.
func (e *SaveError) Unwrap() []error { return []error{ErrSave, e.Err} }

// A CompleteError reports that [Checkpointer.Resume] could not complete
// the final commit of a finished run: the session append failed. The
// checkpoint still records the commit, so a later Resume tries again.
type CompleteError struct {
	RunID     string
	SessionID string
	Err       error
}

// Error names the run, the session and the session store's error.
func (e *CompleteError) Error() string {
	return "checkpoint: complete run " + e.RunID + " in session " + strconv.Quote(e.SessionID) + ": " + e.Err.Error()
}

// Unwrap returns [ErrComplete] and the session store's error.
func (e *CompleteError) Unwrap() []error { return []error{ErrComplete, e.Err} }

// A FinishedError is what [Checkpointer.Resume] returns for a run that had
// already finished: there is nothing to resume. Completed reports that
// Resume completed the run's final commit, which a crash (or a failed
// append) had left unfinished; either way the session now holds the whole
// run. It wraps [pipeline.ErrNothingToResume], the error
// [pipeline.Runner.Resume] gives for a finished run.
type FinishedError struct {
	RunID       string
	FinalOutput string
	Completed   bool
}

// Error names the run and says whether its final commit completed.
func (e *FinishedError) Error() string {
	s := "checkpoint: run " + e.RunID + " finished"
	if e.Completed {
		s += " (final commit completed)"
	}
	return s + ": " + pipeline.ErrNothingToResume.Error()
}

// Unwrap returns [ErrFinished], which wraps [pipeline.ErrNothingToResume].
func (e *FinishedError) Unwrap() error { return ErrFinished }
