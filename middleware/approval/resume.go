package approval

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Resume continues run, a checkpoint loaded from store on which decisions
// were made, so that of several workers resuming the same checkpoint
// exactly one runs its tools. It first saves run (compare-and-swap on the
// version it was loaded at): that save claims the checkpoint, and a worker
// that lost the race gets an error wrapping [state.ErrConflict] before
// anything ran. The winner resumes and saves the run's new state.
//
// The pattern is Load → decide → Resume:
//
//	run, err := store.Load(ctx, id)
//	if err := run.Approve(callID); err != nil { ... }
//	res, err := approval.Resume(ctx, store, runner, agent, run)
//
// A worker that loads the checkpoint after another claimed it finds the
// call already decided ([state.ErrAlreadyDecided]) and must not resume.
// Either way the loser of two concurrent decisions on one call gets an
// error matching [state.ErrConflict]: the claim's, or the decision's.
// The result is that of [pipeline.Runner.Resume]; a failure of the final
// save is joined to its error, and the run's state then is the resumable
// state as far as it got.
func Resume(ctx context.Context, store state.Store, runner *pipeline.Runner, agent *pipeline.Agent, run *state.Run) (*pipeline.Result, error) {
	if err := store.Save(ctx, run); err != nil {
		return nil, fmt.Errorf("approval: claim run %s: %w", run.ID(), err)
	}
	res, err := runner.Resume(ctx, agent, run)
	if serr := store.Save(context.WithoutCancel(ctx), run); serr != nil {
		err = errors.Join(err, fmt.Errorf("approval: save run %s after resume: %w", run.ID(), serr))
	}
	return res, err
}
