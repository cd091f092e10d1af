package riverrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/turnkit/turnkit/state"
)

// A Client enqueues runs, decides approvals and cancels runs, in any
// process: it needs a River client (an insert-only one will do) and the
// state store the workers' checkpointer saves into. TTx is the River
// driver's transaction type (pgx.Tx for riverpgxv5, *sql.Tx for
// riversqlite). A Client is safe for concurrent use.
type Client[TTx any] struct {
	river *river.Client[TTx]
	store state.Store
}

// NewClient returns a client over rc and store. It panics if either is
// nil.
func NewClient[TTx any](rc *river.Client[TTx], store state.Store) *Client[TTx] {
	if rc == nil || store == nil {
		panic("riverrun: NewClient called with a nil River client or state store")
	}
	return &Client[TTx]{river: rc, store: store}
}

// River returns the River client.
func (c *Client[TTx]) River() *river.Client[TTx] { return c.river }

// Enqueue enqueues the start job of a run. A run ID enqueued before (and
// not cancelled or discarded) is not enqueued again: the result says
// UniqueSkippedAsDuplicate and holds the existing job. opts, which may be
// nil, overrides the job's queue, priority, attempts and so on.
func (c *Client[TTx]) Enqueue(ctx context.Context, s Start, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	args, err := s.args()
	if err != nil {
		return nil, err
	}
	res, err := c.river.Insert(ctx, args, opts)
	if err != nil {
		return nil, &EnqueueError{RunID: s.RunID, Err: err}
	}
	return res, nil
}

// EnqueueTx is [Client.Enqueue] in the caller's transaction: the job
// exists if and only if tx commits, so a run enqueued with the row that
// asked for it is never lost nor orphaned.
func (c *Client[TTx]) EnqueueTx(ctx context.Context, tx TTx, s Start, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	args, err := s.args()
	if err != nil {
		return nil, err
	}
	res, err := c.river.InsertTx(ctx, tx, args, opts)
	if err != nil {
		return nil, &EnqueueError{RunID: s.RunID, Err: err}
	}
	return res, nil
}

// Pending returns the calls of the run that wait for a decision (copies),
// read from its checkpoint; empty if none. A missing checkpoint is an
// error wrapping state.ErrNotFound.
func (c *Client[TTx]) Pending(ctx context.Context, runID string) ([]state.Approval, error) {
	run, err := c.store.Load(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("riverrun: pending calls of run %s: %w", runID, err)
	}
	return run.Pending(), nil
}

// A Decision is a verdict on one pending call of a run.
type Decision struct {
	CallID  string
	Verdict state.Verdict
	// Message is what the model is told about a rejected call ("" for the
	// approval middleware's default).
	Message string
	// Action, when set, makes the decision an answer to the request for
	// input the call waits for (an MCP server's elicitation, see
	// [state.Run.AnswerElicitation]) instead of an approval: Verdict and
	// Message are then ignored, and Content is the accepted JSON object.
	Action  state.ElicitAction
	Content string
}

// Answer returns a decision that answers the request for input the call
// waits for: action, with the submitted JSON object content for
// [state.Accept] ("" otherwise). Content is not checked against the
// request's schema here; package tool/mcp's CheckAnswer does that.
func Answer(callID string, action state.ElicitAction, content string) Decision {
	return Decision{CallID: callID, Action: action, Content: content}
}

// Approve returns a decision that approves the call.
func Approve(callID string) Decision { return Decision{CallID: callID, Verdict: state.Approved} }

// Reject returns a decision that rejects the call, telling the model
// message.
func Reject(callID, message string) Decision {
	return Decision{CallID: callID, Verdict: state.Rejected, Message: message}
}

// decideAttempts bounds the retries of a decision that lost a race with
// another decision on the same run.
const decideAttempts = 5

// Decide records decisions on pending calls of a paused run, in its
// checkpoint, and, once every pending call has one, enqueues the job that
// resumes the run. It returns that job's insert result, or nil if calls
// still wait for a decision.
//
// A decision is refused with a [*DecideError], and none of ds is saved,
// if the run finished ([ErrFinished]), if its call already ran or was
// rejected ([ErrResumed]), already has a decision (state.ErrAlreadyDecided:
// the first stands), or is not a pending call of the run
// (state.ErrUnknownCall). Decisions saved concurrently by another process
// on other calls of the run are kept: a lost compare-and-swap reloads the
// checkpoint and tries again.
//
// # Order, and a crash in between
//
// The decisions are saved first (compare-and-swap on the checkpoint's
// version), then the resume job is inserted, unique per run and the
// version the decisions were saved at. Not the other way round: a job
// inserted first could run before the decisions land, find the run
// undecided and complete without resuming it. The store's Save takes no
// transaction of the caller's, so the two cannot be one transaction.
//
// A crash between the two leaves a decided run without a job. Decide
// recovers it: a later Decide on the run, even one refused with
// state.ErrAlreadyDecided (a retry of the lost call), enqueues the resume
// job of a fully decided paused run before it returns; so does
// [Client.EnqueueResume]. The job's uniqueness makes every such call
// enqueue it at most once per version.
func (c *Client[TTx]) Decide(ctx context.Context, runID string, ds ...Decision) (*rivertype.JobInsertResult, error) {
	if len(ds) == 0 {
		return nil, &DecideError{RunID: runID, Err: errors.New("no decisions")}
	}
	for attempt := 1; ; attempt++ {
		run, err := c.store.Load(ctx, runID)
		if errors.Is(err, state.ErrNotFound) {
			return nil, &DecideError{RunID: runID, Err: fmt.Errorf("%w: %w", ErrNoCheckpoint, err)}
		}
		if err != nil {
			return nil, &DecideError{RunID: runID, Err: err}
		}
		decided := len(run.Pending()) > 0 && !undecided(run) // before ds
		if derr := apply(run, ds); derr != nil {
			if decided {
				// A retry after a crash between save and insert: make
				// sure of the resume job; the refusal stands.
				if _, err := c.enqueueResume(ctx, run); err != nil {
					return nil, errors.Join(derr, err)
				}
			}
			return nil, derr
		}
		err = c.store.Save(ctx, run)
		if errors.Is(err, state.ErrConflict) && attempt < decideAttempts {
			continue
		}
		if err != nil {
			return nil, &DecideError{RunID: runID, Err: err}
		}
		if undecided(run) {
			return nil, nil
		}
		return c.enqueueResume(ctx, run)
	}
}

// apply records ds on run, or refuses them all.
func apply(run *state.Run, ds []Decision) error {
	if _, finished := run.FinalOutput(); finished {
		return &DecideError{RunID: run.ID(), Err: ErrFinished}
	}
	for _, d := range ds {
		if !run.IsPending(d.CallID) {
			if _, done := run.Completed(d.CallID); done {
				return &DecideError{RunID: run.ID(), CallID: d.CallID, Err: ErrResumed}
			}
		}
		var err error
		switch {
		case d.Action != 0:
			err = run.AnswerElicitation(d.CallID, d.Action, d.Content)
		case d.Verdict == state.Approved:
			err = run.Approve(d.CallID)
		case d.Verdict == state.Rejected:
			err = run.Reject(d.CallID, d.Message)
		default:
			err = fmt.Errorf("invalid verdict %d", d.Verdict)
		}
		if err != nil {
			return &DecideError{RunID: run.ID(), CallID: d.CallID, Err: err}
		}
	}
	return nil
}

// EnqueueResume enqueues a job that takes the run on from its checkpoint:
// a run decided in full whose resume job was lost, or one whose job was
// cancelled or failed for good. The job is unique per run and checkpoint
// version, so calling it again before the run moves enqueues nothing
// (UniqueSkippedAsDuplicate). It refuses, with an [*EnqueueError], a run
// without a checkpoint ([ErrNoCheckpoint]), a finished one ([ErrFinished])
// and one that waits for decisions ([ErrUndecided]).
//
// Call it for a run no job is working on: a job working on it then races
// the resume, and one of the two stops at its next save with
// state.ErrConflict and retries, which is safe but wasted work.
func (c *Client[TTx]) EnqueueResume(ctx context.Context, runID string) (*rivertype.JobInsertResult, error) {
	run, err := c.store.Load(ctx, runID)
	if errors.Is(err, state.ErrNotFound) {
		return nil, &EnqueueError{RunID: runID, Err: fmt.Errorf("%w: %w", ErrNoCheckpoint, err)}
	}
	if err != nil {
		return nil, &EnqueueError{RunID: runID, Err: err}
	}
	if _, finished := run.FinalOutput(); finished {
		return nil, &EnqueueError{RunID: runID, Err: ErrFinished}
	}
	if undecided(run) {
		return nil, &EnqueueError{RunID: runID, Err: ErrUndecided}
	}
	return c.enqueueResume(ctx, run)
}

func (c *Client[TTx]) enqueueResume(ctx context.Context, run *state.Run) (*rivertype.JobInsertResult, error) {
	args := RunArgs{RunID: run.ID(), Resume: run.Version(), Agent: startAgent(run), SessionID: run.SessionID()}
	res, err := c.river.Insert(ctx, args, nil)
	if err != nil {
		return nil, &EnqueueError{RunID: run.ID(), Err: err}
	}
	return res, nil
}

// Cancel cancels every job of the run that has not finalized: a queued
// job does not run, and a running one has its context cancelled (at once
// where River has a notifier, as on PostgreSQL; within a few seconds
// where it polls, as on SQLite). The run's checkpoint stays resumable
// with [Client.EnqueueResume]. It returns the jobs it cancelled.
func (c *Client[TTx]) Cancel(ctx context.Context, runID string) ([]*rivertype.JobRow, error) {
	params := river.NewJobListParams().Kinds(Kind).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled).
		Where("args ->> 'run_id' = @run_id", river.NamedArgs{"run_id": runID}).First(1000)
	list, err := c.river.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("riverrun: cancel run %s: %w", runID, err)
	}
	var out []*rivertype.JobRow
	for _, j := range list.Jobs {
		row, err := c.river.JobCancel(ctx, j.ID)
		if err != nil {
			return out, fmt.Errorf("riverrun: cancel run %s job %d: %w", runID, j.ID, err)
		}
		out = append(out, row)
	}
	return out, nil
}

// Jobs returns the run's jobs, in any state, oldest first.
func (c *Client[TTx]) Jobs(ctx context.Context, runID string) ([]*rivertype.JobRow, error) {
	params := river.NewJobListParams().Kinds(Kind).
		Where("args ->> 'run_id' = @run_id", river.NamedArgs{"run_id": runID}).First(1000)
	list, err := c.river.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("riverrun: jobs of run %s: %w", runID, err)
	}
	return list.Jobs, nil
}
