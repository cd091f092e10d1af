package riverrun

import (
	"errors"
	"strconv"

	"github.com/turnkit/turnkit/pipeline"
)

// Errors of this package; match them with errors.Is. The typed errors
// below wrap them and say which run.
var (
	// ErrInvalidStart means a [Start] lacks its run ID, its agent or its
	// input, or gives both Text and Input. It is wrapped by
	// [*EnqueueError].
	ErrInvalidStart = errors.New("riverrun: invalid start")
	// ErrUnknownAgent means a job names an agent the worker's [Registry]
	// does not hold. The job is cancelled with it. It wraps
	// [pipeline.ErrUnknownAgent], so errors.Is matches either.
	ErrUnknownAgent error = &kindError{msg: "riverrun: unknown agent", kind: pipeline.ErrUnknownAgent}
	// ErrNoCheckpoint means a resume job or a decision found no checkpoint
	// for its run. It is wrapped by [*DecideError] and [*EnqueueError], and
	// a resume job is cancelled with it.
	ErrNoCheckpoint = errors.New("riverrun: no checkpoint for the run")
	// ErrFinished means the run already finished: there is nothing to
	// decide or resume. It is wrapped by [*DecideError] and
	// [*EnqueueError].
	ErrFinished = errors.New("riverrun: run finished")
	// ErrResumed means the call a decision names already ran or was
	// rejected: the run was resumed past it. It is wrapped by
	// [*DecideError].
	ErrResumed = errors.New("riverrun: call already resumed")
	// ErrUndecided means a run waits for decisions that were not made: a
	// resume job would pause it again. It is wrapped by [*EnqueueError].
	ErrUndecided = errors.New("riverrun: run waits for decisions")
	// ErrEnqueue means a run's job was not enqueued. It is wrapped by
	// [*EnqueueError].
	ErrEnqueue = errors.New("riverrun: job not enqueued")
	// ErrDecide means a decision was refused or not saved. It is wrapped
	// by [*DecideError].
	ErrDecide = errors.New("riverrun: decision not recorded")
	// ErrJob means a run's job failed or will be retried. It is wrapped by
	// [*JobError].
	ErrJob = errors.New("riverrun: job failed")
	// ErrErase means a session's jobs were not all deleted. It is wrapped
	// by [*EraseError].
	ErrErase = errors.New("riverrun: jobs not erased")
	// ErrJobsRunning means jobs of a session were still running, which
	// River does not delete. It is wrapped by [*EraseError].
	ErrJobsRunning = errors.New("riverrun: jobs still running")
)

// kindError is a sentinel that wraps another package's sentinel: it
// matches itself and the one it refines.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// An EnqueueError reports a run's job that was not enqueued. Err wraps
// [ErrInvalidStart], [ErrNoCheckpoint], [ErrFinished], [ErrUndecided], or
// the store's or River's error.
type EnqueueError struct {
	RunID string
	Err   error
}

// Error names the run and the cause.
func (e *EnqueueError) Error() string {
	return "riverrun: enqueue run " + strconv.Quote(e.RunID) + ": " + e.Err.Error()
}

// Unwrap returns [ErrEnqueue] and the cause.
func (e *EnqueueError) Unwrap() []error { return []error{ErrEnqueue, e.Err} }

// A DecideError reports a decision that was refused or not saved; the
// checkpoint is unchanged. Err wraps [ErrNoCheckpoint], [ErrFinished],
// [ErrResumed], state.ErrAlreadyDecided (the call has a decision; the first
// one stands), state.ErrUnknownCall, state.ErrConflict (the run changed
// under the decision too often), or the store's error.
type DecideError struct {
	RunID  string
	CallID string
	Err    error
}

// Error names the run, the call, if any, and the cause.
func (e *DecideError) Error() string {
	s := "riverrun: decide run " + strconv.Quote(e.RunID)
	if e.CallID != "" {
		s += " call " + strconv.Quote(e.CallID)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns [ErrDecide] and the cause.
func (e *DecideError) Unwrap() []error { return []error{ErrDecide, e.Err} }

// A JobError is the error a run's job failed or will be retried with: the
// run's error, with the job's run and attempt.
type JobError struct {
	RunID   string
	Attempt int
	// Retry reports that the job returned the error for River to retry
	// (with its backoff); otherwise the job was cancelled with it.
	Retry bool
	Err   error
}

// Error names the run and the attempt, says whether River will retry it, and gives the cause.
func (e *JobError) Error() string {
	what := "failed"
	if e.Retry {
		what = "will retry"
	}
	return "riverrun: run " + strconv.Quote(e.RunID) + " attempt " + strconv.Itoa(e.Attempt) + " " + what + ": " + e.Err.Error()
}

// Unwrap returns [ErrJob] and the run's error.
func (e *JobError) Unwrap() []error { return []error{ErrJob, e.Err} }
