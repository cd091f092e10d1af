package state

import "context"

// A Store keeps checkpoints of runs, one per run ID, with compare-and-swap
// on the version so that one writer wins.
//
// Save writes run if the stored version equals run.Version() (0 means "no
// checkpoint yet"), and on success sets run's version to the new stored
// version. It writes what changed since that version, not the whole run:
// see [Run.Delta] and [Assemble], which implementations use so that a
// save costs O(its new items), and records the save with runcore.Saved.
// Otherwise it returns ErrConflict and changes nothing. Load
// returns a new Run (sharing nothing with earlier loads) with its version
// set, or ErrNotFound. Delete removes the checkpoint; deleting a missing
// one is not an error.
//
// Implementations must be safe for concurrent use and honour ctx. They
// are turnkit's own (state/memstore, state/filestore and the session
// stores' checkpoint stores): recording a save and setting a loaded run's
// version are operations only turnkit's packages reach, through
// internal/runcore, as the core's are. A Store written elsewhere wraps
// one of them (package statetest checks it).
type Store interface {
	Load(ctx context.Context, runID string) (*Run, error)
	Save(ctx context.Context, run *Run) error
	Delete(ctx context.Context, runID string) error
}
