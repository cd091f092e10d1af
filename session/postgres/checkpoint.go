package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

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
	err := s.pool.QueryRow(ctx, s.q.loadCheckpoint, runID).Scan(&version, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	if err != nil {
		return nil, s.gate.WrapRun(ctx, "load", runID, err)
	}
	return s.codec.DecodeRun(runID, version, data)
}

// Save writes run's checkpoint if the stored version equals run.Version()
// (0: none stored), with one conditional statement (an INSERT that does
// nothing on conflict, or an UPDATE ... WHERE version = $have), and then
// sets run's version to the new one. Otherwise it returns a
// [*state.StoreError] wrapping [state.ErrConflict] and changes nothing: of
// two workers saving the same version, exactly one wins.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	data, err := s.codec.Encode(run)
	if err != nil {
		return err
	}
	if err := s.gate.BeginRun(ctx, "save", run.ID()); err != nil {
		return err
	}
	have := run.Version()
	q, args := s.q.updateCheckpoint, []any{run.ID(), have, data}
	if have == 0 {
		q, args = s.q.insertCheckpoint, []any{run.ID(), data}
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	if tag.RowsAffected() == 0 {
		var stored int64 // for the message only: it may have moved on since
		_ = s.pool.QueryRow(ctx, s.q.loadVersion, run.ID()).Scan(&stored)
		return &state.StoreError{Op: "save", RunID: run.ID(), Have: have, Stored: stored, Err: state.ErrConflict}
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
	_, err := s.pool.Exec(ctx, s.q.deleteCkpt, runID)
	return s.gate.WrapRun(ctx, "delete", runID, err)
}
