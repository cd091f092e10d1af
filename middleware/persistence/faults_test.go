package persistence_test

import (
	"testing"

	"github.com/turnkit/turnkit/middleware/persistence/internal/faultsuite"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
)

// TestFaultsMemory runs the fault suite on the in-memory store;
// internal/backends runs it on SQLite, PostgreSQL and Redis.
func TestFaultsMemory(t *testing.T) {
	t.Parallel()
	faultsuite.Run(t, func(t *testing.T) session.Store { return memory.New() })
}
