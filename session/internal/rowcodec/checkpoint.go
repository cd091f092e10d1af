package rowcodec

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// Encode returns the stored form of a checkpoint: [state.Marshal] of run.
func Encode(run *state.Run) ([]byte, error) {
	if run == nil || run.ID() == "" {
		return nil, &state.StoreError{Op: "save", Err: errors.New("nil run or empty run ID")}
	}
	data, err := state.Marshal(run)
	if err != nil {
		return nil, &state.StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	return data, nil
}

// DecodeRun rebuilds a checkpoint stored at version.
func DecodeRun(runID string, version int64, data []byte) (*state.Run, error) {
	run, err := state.Unmarshal(data)
	if err != nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
	}
	run.SetVersion(version)
	return run, nil
}

// StoreErr translates an error of a state.Store operation at the edge into
// a [*state.StoreError]: after Close it wraps [session.ErrClosed]; when ctx
// is done it wraps ctx's error; an error that already is a StoreError is
// returned as is.
func StoreErr(ctx context.Context, pkg, op, runID string, closed bool, err error) error {
	var se *state.StoreError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return err
	case closed:
		err = session.ErrClosed
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return &state.StoreError{Op: op, RunID: runID, Err: fmt.Errorf("%s: %w", pkg, err)}
}
