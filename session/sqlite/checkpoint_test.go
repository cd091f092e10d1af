package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// rawDB opens the store's file beside it, to reach its rows around the
// store's API.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func rawExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// backend is the store in the file at path for package ckpttest.
func backend(t *testing.T, path string) ckpttest.Backend {
	open(t, path) // creates the schema
	db := rawDB(t, path)
	return ckpttest.Backend{
		New: func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) ckpttest.Store {
			s, err := sqlite.Open(path, sqlite.WithCodec(m, u))
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		PutHead: func(t *testing.T, runID string, version int64, data, context []byte) {
			rawExec(t, db, `INSERT OR REPLACE INTO run_checkpoints (run_id, version, data) VALUES (?, ?, ?)`, runID, version, data)
			rawExec(t, db, `DELETE FROM run_checkpoint_contexts WHERE run_id = ?`, runID)
			if context != nil {
				rawExec(t, db, `INSERT INTO run_checkpoint_contexts (run_id, data) VALUES (?, ?)`, runID, context)
			}
		},
		Items: func(t *testing.T, runID string) []state.Piece {
			rows, err := db.Query(`SELECT seq, version, data FROM run_checkpoint_items WHERE run_id = ? ORDER BY seq`, runID)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []state.Piece
			for rows.Next() {
				var p state.Piece
				if err := rows.Scan(&p.Seq, &p.Version, &p.Data); err != nil {
					t.Fatal(err)
				}
				out = append(out, p)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return out
		},
		PutItem: func(t *testing.T, runID string, p state.Piece) {
			// The row at p's position, whatever its version, replaced:
			// the key starts with the version (migration 0012).
			rawExec(t, db, `DELETE FROM run_checkpoint_items WHERE run_id = ? AND seq = ?`, runID, p.Seq)
			rawExec(t, db, `INSERT INTO run_checkpoint_items (run_id, seq, version, data) VALUES (?, ?, ?, ?)`,
				runID, p.Seq, p.Version, p.Data)
		},
		DeleteItem: func(t *testing.T, runID string, seq int64) {
			rawExec(t, db, `DELETE FROM run_checkpoint_items WHERE run_id = ? AND seq = ?`, runID, seq)
		},
		SetContext: func(t *testing.T, runID string, context []byte) {
			rawExec(t, db, `DELETE FROM run_checkpoint_contexts WHERE run_id = ?`, runID)
			if context != nil {
				rawExec(t, db, `INSERT INTO run_checkpoint_contexts (run_id, data) VALUES (?, ?)`, runID, context)
			}
		},
		Written: func(t *testing.T, runID string, save func()) (int, int64) {
			return walWritten(t, db, path, runID, save)
		},
	}
}

// walWritten empties the file's write-ahead log, calls save and returns
// the item rows the save wrote (those at the new version) and the bytes it
// appended to the log: the pages the save wrote, as SQLite writes them.
func walWritten(t testing.TB, db *sql.DB, path, runID string, save func()) (int, int64) {
	t.Helper()
	var busy, logged, done int
	if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done); err != nil || busy != 0 {
		t.Fatalf("wal_checkpoint(TRUNCATE) = busy %d, %v", busy, err)
	}
	save()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM run_checkpoint_items
		WHERE run_id = ?1 AND version = (SELECT version FROM run_checkpoints WHERE run_id = ?1)`, runID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	return rows, fi.Size()
}

func TestCheckpointRows(t *testing.T) {
	ckpttest.Run(t, backend(t, filepath.Join(t.TempDir(), "rows.db")))
}

// TestCheckpointDeleteRemovesItems checks that Delete leaves no row of the
// run behind.
func TestCheckpointDeleteRemovesItems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "delete.db")
	s := open(t, path)
	r := ckpttest.LongRun(t, "run-delete", 6)
	if err := s.Save(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	ckpttest.Turn(t, r, 10)
	if err := s.Save(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), r.ID()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT (SELECT count(*) FROM run_checkpoint_items) +
		(SELECT count(*) FROM run_checkpoint_contexts) + (SELECT count(*) FROM run_checkpoints)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after Delete = %d, %v; want 0", n, err)
	}
	if _, err := s.Load(t.Context(), r.ID()); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Load after Delete = %v, want ErrNotFound", err)
	}
}
