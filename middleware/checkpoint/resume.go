package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Resume is the recovery step of a worker: it loads the checkpoint of
// runID from the checkpointer's store and takes the run on from wherever
// it stopped, on this worker.
//
//   - A run that is not finished (its worker crashed or failed, or it
//     paused and decisions were saved on its checkpoint) is resumed with
//     runner.Resume. The run stage of [Checkpointer.Middleware], which
//     runner must have in its chain, claims it before anything runs; calls
//     that were open when the worker died run again under their own
//     idempotency keys, unless the session already holds their outputs. A
//     run paused without decisions pauses again.
//   - A finished run gets its final commit completed if a crash (or a
//     failed append) lost it: the items recorded in the checkpoint before
//     the commit are appended (appends are idempotent) and the checkpoint
//     is saved. Resume then returns a nil result and a [*FinishedError],
//     which wraps [pipeline.ErrNothingToResume]: the model is not asked
//     again.
//
// agent is the run's starting agent, as for [pipeline.Runner.Resume]. The
// result and error are those of runner.Resume otherwise. An error wrapping
// [state.ErrConflict] means another worker saved the run first and owns
// it: stop working on it. A missing checkpoint is an error wrapping
// [state.ErrNotFound]: start the run with runner.Run.
//
// Resume takes the run over: call it for a run whose worker is gone (a
// lease or a queue's visibility timeout expired) or that was paused. If
// the run's worker is in fact alive, the first of the two to save wins and
// the other stops at its next save with [state.ErrConflict]; a tool the
// loser was running when it lost may have run on both, under the same
// idempotency key.
//
// For a run paused for approval, deciding and resuming on one worker
// needs no Resume: load the checkpoint, decide, and call runner.Resume
// (or approval.Resume, which saves before and after as the checkpointer
// does too). Saving the decisions and letting any worker call Resume by
// run ID works as well.
func (c *Checkpointer) Resume(ctx context.Context, runner *pipeline.Runner, agent *pipeline.Agent, runID string) (*pipeline.Result, error) {
	if runner == nil || agent == nil {
		return nil, fmt.Errorf("checkpoint: resume run %s: nil runner or agent", runID)
	}
	run, err := c.store.Load(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: resume run %s: %w", runID, err)
	}
	if out, done := run.FinalOutput(); done {
		completed, err := c.complete(ctx, run)
		if err != nil {
			return nil, err
		}
		return nil, &FinishedError{RunID: runID, FinalOutput: out, Completed: completed}
	}
	if run.Len() == 0 && run.Turn() == 0 {
		return nil, fmt.Errorf("checkpoint: resume run %s: %w: it never started; start it with Runner.Run", runID, pipeline.ErrNothingToResume)
	}
	return runner.Resume(ctx, agent, run)
}

// complete completes the final commit recorded in a finished run, if any:
// it claims the run, appends the commit's items and saves the run with the
// commit done. It reports whether there was a commit to complete.
func (c *Checkpointer) complete(ctx context.Context, run *state.Run) (bool, error) {
	sid, items, ok, err := loadCommit(run)
	if err != nil || !ok {
		return false, err
	}
	sess := c.session
	if sess == nil {
		return false, &CompleteError{RunID: run.ID(), SessionID: sid, Err: errors.New("the checkpointer has no session store (New was not given WithSession)")}
	}
	if err := c.store.Save(ctx, run); err != nil { // claim: one worker completes
		return false, &SaveError{RunID: run.ID(), Stage: StageComplete, Err: err}
	}
	if err := sess.Append(ctx, sid, run.ID(), items); err != nil {
		return false, &CompleteError{RunID: run.ID(), SessionID: sid, Err: err}
	}
	last := items[len(items)-1].Seq()
	for _, it := range items {
		last = max(last, it.Seq())
	}
	runcore.SetSessionWatermark(run, max(run.SessionWatermark(), last))
	clearCommit(run)
	if c.cfg.retention.kind == keepFor {
		c.stampFinished(run)
	}
	if err := c.store.Save(ctx, run); err != nil {
		return false, &SaveError{RunID: run.ID(), Stage: StageComplete, Err: err}
	}
	if c.cfg.retention != KeepAll {
		c.prune(ctx, run)
	}
	return true, nil
}
