package sqlite_test

import (
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
