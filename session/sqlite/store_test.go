package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

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
