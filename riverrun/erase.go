package riverrun

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// eraseBatch is how many jobs one delete of [Client.Erase] removes.
const eraseBatch = 1000

// Erase deletes every job of session sessionID's runs from River's job
// table, in any state: the start jobs, whose arguments hold the runs'
// input in the clear, the resume jobs, and with them the outputs
// (final output, pending calls and their arguments) and the errors the
// jobs recorded. It returns how many jobs it deleted. It is the River
// part of erasing a session; session/encrypt's Erase (or a sealed
// store's) does the stores' part. Erase the jobs first, so that no job
// of the session resumes a run while its checkpoints go.
//
// A job not yet finalized is cancelled first, so a queued one never runs;
// a running one has its context cancelled, and River deletes no running
// job: if one is still running after the deletes, Erase fails with an
// [*EraseError] wrapping [ErrJobsRunning], having deleted the rest. Call
// it again once the job has stopped; Erase is idempotent. Jobs enqueued
// for the session while Erase goes on (a decision's resume job) may
// survive it: stop the session's work first.
func (c *Client[TTx]) Erase(ctx context.Context, sessionID string) (int, error) {
	if sessionID == "" {
		return 0, &EraseError{SessionID: sessionID, Err: errors.New("empty session ID")}
	}
	where, named := "args ->> 'session_id' = @session_id", river.NamedArgs{"session_id": sessionID}
	open, err := c.river.JobList(ctx, river.NewJobListParams().Kinds(Kind).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled).
		Where(where, named).First(eraseBatch))
	if err != nil {
		return 0, &EraseError{SessionID: sessionID, Err: err}
	}
	for _, j := range open.Jobs {
		if _, err := c.river.JobCancel(ctx, j.ID); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
			return 0, &EraseError{SessionID: sessionID, Err: fmt.Errorf("cancel job %d: %w", j.ID, err)}
		}
	}
	deleted := 0
	for {
		res, err := c.river.JobDeleteMany(ctx, river.NewJobDeleteManyParams().Kinds(Kind).Where(where, named).First(eraseBatch))
		if err != nil {
			return deleted, &EraseError{SessionID: sessionID, Err: err}
		}
		deleted += len(res.Jobs)
		if len(res.Jobs) < eraseBatch {
			break
		}
	}
	left, err := c.river.JobList(ctx, river.NewJobListParams().Kinds(Kind).Where(where, named).First(eraseBatch))
	if err != nil {
		return deleted, &EraseError{SessionID: sessionID, Err: err}
	}
	if n := len(left.Jobs); n > 0 {
		return deleted, &EraseError{SessionID: sessionID, Err: fmt.Errorf("%w: %d jobs, job %d first", ErrJobsRunning, n, left.Jobs[0].ID)}
	}
	return deleted, nil
}

// An EraseError reports a session whose jobs [Client.Erase] did not all
// delete. Err wraps [ErrJobsRunning] or River's error.
type EraseError struct {
	SessionID string
	Err       error
}

// Error names the session and the cause.
func (e *EraseError) Error() string {
	return "riverrun: erase the jobs of session " + strconv.Quote(e.SessionID) + ": " + e.Err.Error()
}

// Unwrap returns [ErrErase] and the cause.
func (e *EraseError) Unwrap() []error { return []error{ErrErase, e.Err} }
