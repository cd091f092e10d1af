package state

import "context"

// A Store keeps checkpoints of runs, one per run ID, with compare-and-swap
// on the version so that one writer wins.
//
// Save writes run if the stored version equals run.Version() (0 means "no
// checkpoint yet"), and on success sets run's version to the new stored
// version. It writes what changed since that version, not the whole run
// ([Run.Delta]), so that a save costs O(its new items). Otherwise it
// returns ErrConflict and changes nothing. Load returns a new Run (sharing
// nothing with earlier loads) with its version set, or ErrNotFound.
// Delete removes the checkpoint; deleting a missing one is not an error.
//
// Implementations must be safe for concurrent use and honour ctx. A store
// written outside turnkit implements package state/storage's Backend,
// which only writes and reads what a save hands it, and storage.NewStore
// makes it a Store (package statetest checks it); state/memstore and
// state/filestore are built the same way.
type Store interface {
	Load(ctx context.Context, runID string) (*Run, error)
	Save(ctx context.Context, run *Run) error
	Delete(ctx context.Context, runID string) error
}
