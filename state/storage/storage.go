package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// ErrVersion means a backend's Write reported a version other than the
// one of the delta it was given: the backend is broken, and the run's
// version is left as it was.
var ErrVersion = errors.New("storage: backend stored another version than the delta's")

// errNoRun means Save was given a nil run or one without an ID.
var errNoRun = errors.New("nil run or empty run ID")

// A Backend keeps what saves wrote of runs' checkpoints: the part of a
// checkpoint store its author writes. It must be safe for concurrent use
// and honour ctx.
type Backend interface {
	// Write applies d as one atomic compare-and-swap. If the version
	// stored for d.RunID is d.Base (0: nothing stored), it replaces the
	// stored head with d.Head, keeps each of d.Items by its Seq (a later
	// piece at a Seq replaces an earlier one), replaces the stored context
	// with d.Context unless that is nil, and, when d.Full, first drops
	// every piece and context it holds of the run; then it returns
	// d.Version. Otherwise it changes nothing and returns an error
	// wrapping [state.ErrConflict] (a [*state.StoreError] with Have and
	// Stored set reads best).
	Write(ctx context.Context, d *state.Delta) (version int64, err error)
	// Read returns what the writes left of the run, or an error wrapping
	// [state.ErrNotFound]. The slices are the caller's.
	Read(ctx context.Context, runID string) (Stored, error)
	// Delete drops everything stored of the run; a run not stored is not
	// an error.
	Delete(ctx context.Context, runID string) error
}

// Stored is what a [Backend] holds of a run: the last head written, the
// last context written, and every piece written since (and with) the last
// full write, in any order.
type Stored struct {
	Head    []byte
	Context []byte
	Pieces  []state.Piece
}

// Save saves run through b as version run.Version()+1: it takes run's
// delta (its head encoded with opts, such as [state.WithSigningKey]), has
// b write it, and on success records the save on run, whose version is
// then the stored one. It fails with b's error (wrapped in a
// [*state.StoreError] unless it is one), with an error wrapping
// [ErrVersion] when b reports another version than the delta's, and
// changes run only on success.
func Save(ctx context.Context, b Backend, run *state.Run, opts ...state.MarshalOption) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if run == nil || run.ID() == "" {
		return &state.StoreError{Op: "save", Err: errNoRun}
	}
	d, err := run.Delta(opts...)
	if err != nil {
		return &state.StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	v, err := b.Write(ctx, d)
	if err != nil {
		return storeError("save", run.ID(), err)
	}
	if v != d.Version {
		return &state.StoreError{Op: "save", RunID: run.ID(),
			Err: fmt.Errorf("%w: wrote delta version %d, backend says %d", ErrVersion, d.Version, v)}
	}
	runcore.Saved(run, d)
	return nil
}

// Load reads what b stored of the run and reassembles it with
// [state.Assemble] and opts (such as [state.WithVerifyKeys]). The run
// shares nothing with earlier loads and carries its stored version. It
// fails with b's error (wrapped in a [*state.StoreError] unless it is
// one), or with the decoding error of what b returned.
func Load(ctx context.Context, b Backend, runID string, opts ...state.UnmarshalOption) (*state.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := b.Read(ctx, runID)
	if err != nil {
		return nil, storeError("load", runID, err)
	}
	r, err := state.Assemble(st.Head, st.Context, st.Pieces, opts...)
	if err != nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
	}
	return r, nil
}

// storeError returns err as a [*state.StoreError] of op on runID: as it
// is when it is one, and wrapped otherwise.
func storeError(op, runID string, err error) error {
	if _, ok := errors.AsType[*state.StoreError](err); ok {
		return err
	}
	return &state.StoreError{Op: op, RunID: runID, Err: err}
}
