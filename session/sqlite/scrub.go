package sqlite

import (
	"context"
	"fmt"
)

// ErrScrubBusy means [Store.Scrub] rewrote the database but could not
// empty its write-ahead log: a reader (in this process or another) held
// an older snapshot. Call Scrub again when it is done.
var ErrScrubBusy = fmt.Errorf("sqlite: scrub: a reader holds the write-ahead log")

// Scrub makes the rows deleted so far unrecoverable from the database's
// files: SQLite leaves a deleted row's bytes in free space of its pages
// and in the write-ahead log until they are overwritten. Scrub rebuilds
// the database (VACUUM, which writes only live rows) and checkpoints the
// log into it, truncating the log to nothing, so that no byte of a
// deleted row is left in the file, its -wal or its -shm. It costs a copy
// of the whole database: call it after an erasure, not on every delete.
// It takes the store's write turn; a reader that still holds an older
// snapshot makes it fail with [ErrScrubBusy].
func (s *Store) Scrub(ctx context.Context) error {
	if err := s.gate.Begin(ctx, "scrub", ""); err != nil {
		return err
	}
	if err := s.lockWrite(ctx); err != nil {
		return s.gate.Wrap(ctx, "scrub", "", err)
	}
	defer s.unlockWrite()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.gate.Wrap(ctx, "scrub", "", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "VACUUM"); err != nil {
		return s.gate.Wrap(ctx, "scrub", "", fmt.Errorf("vacuum: %w", err))
	}
	var busy, logFrames, done int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
		return s.gate.Wrap(ctx, "scrub", "", fmt.Errorf("checkpoint: %w", err))
	}
	if busy != 0 {
		return ErrScrubBusy
	}
	return nil
}
