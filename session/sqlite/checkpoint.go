package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/turnkit/turnkit/state"
)

var _ state.Store = (*Store)(nil)

// Load returns the run's checkpoint, a new [state.Run] with its stored
// version set, or a [*state.StoreError] wrapping [state.ErrNotFound].
func (s *Store) Load(ctx context.Context, runID string) (*state.Run, error) {
	if err := s.gate.BeginRun(ctx, "load", runID); err != nil {
		return nil, err
	}
	var (
		version int64
		data    []byte
	)
	err := s.db.QueryRowContext(ctx, `SELECT version, data FROM run_checkpoints WHERE run_id = ?`, runID).Scan(&version, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	if err != nil {
		return nil, s.gate.WrapRun(ctx, "load", runID, err)
	}
	return s.codec.DecodeRun(runID, version, data)
}

// Save writes run's checkpoint if the stored version equals run.Version()
// (0: none stored), in one immediate transaction, and then sets run's
// version to the new one. Otherwise it returns a [*state.StoreError]
// wrapping [state.ErrConflict] and changes nothing.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	data, err := s.codec.Encode(run)
	if err != nil {
		return err
	}
	if err := s.gate.BeginRun(ctx, "save", run.ID()); err != nil {
		return err
	}
	if err := s.lockWrite(ctx); err != nil {
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	defer s.unlockWrite()
	have := run.Version()
	var stored int64
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT version FROM run_checkpoints WHERE run_id = ?`, run.ID()).Scan(&stored)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if stored != have {
			return &state.StoreError{Op: "save", RunID: run.ID(), Have: have, Stored: stored, Err: state.ErrConflict}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO run_checkpoints (run_id, version, data) VALUES (?, ?, ?)
			ON CONFLICT (run_id) DO UPDATE SET version = excluded.version, data = excluded.data`, run.ID(), have+1, data)
		return err
	})
	if err != nil {
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	run.SetVersion(have + 1)
	return nil
}

// Delete removes the run's checkpoint; deleting a missing one is not an
// error.
func (s *Store) Delete(ctx context.Context, runID string) error {
	if err := s.gate.BeginRun(ctx, "delete", runID); err != nil {
		return err
	}
	if err := s.lockWrite(ctx); err != nil {
		return s.gate.WrapRun(ctx, "delete", runID, err)
	}
	defer s.unlockWrite()
	_, err := s.db.ExecContext(ctx, `DELETE FROM run_checkpoints WHERE run_id = ?`, runID)
	return s.gate.WrapRun(ctx, "delete", runID, err)
}
