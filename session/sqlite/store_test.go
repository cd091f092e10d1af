package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	sessiontest.TestStore(t, func(t *testing.T) session.Store {
		return open(t, filepath.Join(t.TempDir(), "sessions.db"))
	})
}

func TestCheckpointConformance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	statetest.TestStore(t, func(t *testing.T) state.Store { return open(t, path) })
}

func TestSignedCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signed.db")
	open(t, path) // creates the schema; the rewrite below goes around the store's API
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	statetest.TestSignedStore(t,
		func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) state.Store {
			s, err := sqlite.Open(path, sqlite.WithCodec(m, u))
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		func(t *testing.T, runID string, edit func([]byte) []byte) {
			var data []byte
			if err := db.QueryRow(`SELECT data FROM run_checkpoints WHERE run_id = ?`, runID).Scan(&data); err != nil {
				t.Fatalf("read checkpoint %s: %v", runID, err)
			}
			if _, err := db.Exec(`UPDATE run_checkpoints SET data = ? WHERE run_id = ?`, edit(data), runID); err != nil {
				t.Fatalf("UPDATE checkpoint %s: %v", runID, err)
			}
		})
}

// TestOneConnection appends on a store of one connection: an append to a
// run with its place runs a prepared insert inside its transaction, which
// must not wait for a second connection to prepare it.
func TestOneConnection(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "one.db"), sqlite.WithMaxConns(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i := range int64(3) { // the run's first append places it; the others insert at its place
		if err := s.Append(ctx, "one", "run", sessiontest.Batch(i)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	items, err := s.List(ctx, "one", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 9 {
		t.Errorf("the session holds %d items, want 9", len(items))
	}
}

// TestCache runs the cache suite with two handles on one file: two
// processes.
func TestCache(t *testing.T) {
	sessiontest.TestCache(t, func(t *testing.T) (session.Store, session.Store) {
		path := filepath.Join(t.TempDir(), "sessions.db")
		return open(t, path), open(t, path)
	})
}
