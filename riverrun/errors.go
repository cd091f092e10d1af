package riverrun

import (
	"errors"
	"strconv"
)

// Errors of this package; match them with errors.Is. The typed errors
// below wrap them and say which run.
var (
	// ErrInvalidStart means a [Start] lacks its run ID, its agent or its
	// input, or gives both Text and Input. It is wrapped by
	// [*EnqueueError].
	ErrInvalidStart = errors.New("riverrun: invalid start")
	// ErrUnknownAgent means a job names an agent the worker's [Registry]
	// does not hold. The job is cancelled with it.
	ErrUnknownAgent = errors.New("riverrun: unknown agent")
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
)

// An EnqueueError reports a run's job that was not enqueued. Err wraps
// [ErrInvalidStart], [ErrNoCheckpoint], [ErrFinished], [ErrUndecided], or
// the store's or River's error.
type EnqueueError struct {
	RunID string
	Err   error
}

func (e *EnqueueError) Error() string {
	return "riverrun: enqueue run " + strconv.Quote(e.RunID) + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *EnqueueError) Unwrap() error { return e.Err }

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

func (e *DecideError) Error() string {
	s := "riverrun: decide run " + strconv.Quote(e.RunID)
	if e.CallID != "" {
		s += " call " + strconv.Quote(e.CallID)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *DecideError) Unwrap() error { return e.Err }

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

func (e *JobError) Error() string {
	what := "failed"
	if e.Retry {
		what = "will retry"
	}
	return "riverrun: run " + strconv.Quote(e.RunID) + " attempt " + strconv.Itoa(e.Attempt) + " " + what + ": " + e.Err.Error()
}

// Unwrap returns the run's error.
func (e *JobError) Unwrap() error { return e.Err }
