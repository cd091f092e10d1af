package backends_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/middleware/persistence/internal/faultsuite"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// The fault suite on the shared backends. Each store is scoped to a fresh
// session ID, so the tests never meet another test's items on a shared
// server.

func TestFaultsSQLite(t *testing.T) {
	t.Parallel()
	faultsuite.Run(t, func(t *testing.T) session.Store {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "session.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestFaultsPostgres(t *testing.T) {
	t.Parallel()
	url := testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
	faultsuite.Run(t, func(t *testing.T) session.Store {
		s, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		return scoped(s)
	})
}

func TestFaultsRedis(t *testing.T) {
	t.Parallel()
	url := testenv.ServerURL(t, "TURNKIT_REDIS_URL")
	faultsuite.Run(t, func(t *testing.T) session.Store {
		s, err := redis.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		return scoped(s)
	})
}

// scoped maps the suite's session ID to a fresh one on a shared store.
func scoped(s session.Store) session.Store {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &scopedStore{Store: s, id: "chat-" + hex.EncodeToString(b[:])}
}

type scopedStore struct {
	session.Store
	id string
}

func (s *scopedStore) List(ctx context.Context, _ string, limit int) ([]state.Item, error) {
	return s.Store.List(ctx, s.id, limit)
}

func (s *scopedStore) ListBefore(ctx context.Context, _, runID string, q session.HistoryQuery) (session.History, error) {
	return s.Store.ListBefore(ctx, s.id, runID, q)
}

func (s *scopedStore) Append(ctx context.Context, _, runID string, items []state.Item) error {
	return s.Store.Append(ctx, s.id, runID, items)
}

func (s *scopedStore) Lookup(ctx context.Context, _, runID string, seq int64) (state.Item, bool, error) {
	return s.Store.Lookup(ctx, s.id, runID, seq)
}

func (s *scopedStore) Pop(ctx context.Context, _ string) (state.Item, bool, error) {
	return s.Store.Pop(ctx, s.id)
}

func (s *scopedStore) Clear(ctx context.Context, _ string) error { return s.Store.Clear(ctx, s.id) }
