package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serverURL(t testing.TB) string {
	t.Helper()
	return testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
}

// testSchema returns a fresh schema name and a pool, dropping the schema
// and closing the pool when the test ends.
func testSchema(t testing.TB) (string, *pgxpool.Pool) {
	t.Helper()
	url := serverURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("pgxpool.New = %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "turnkit_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		_, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		pool.Close()
	})
	return schema, pool
}

func TestConformance(t *testing.T) {
	schema, pool := testSchema(t)
	sessiontest.TestStore(t, func(t *testing.T) session.Store {
		s, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema))
		if err != nil {
			t.Fatalf("New = %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// TestCache runs the cache suite with two pools on one database: two
// processes.
func TestCache(t *testing.T) {
	schema, pool := testSchema(t)
	sessiontest.TestCache(t, func(t *testing.T) (session.Store, session.Store) {
		a, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema))
		if err != nil {
			t.Fatalf("New = %v", err)
		}
		t.Cleanup(func() { _ = a.Close() })
		other, err := pgxpool.New(t.Context(), serverURL(t))
		if err != nil {
			t.Fatalf("pgxpool.New = %v", err)
		}
		t.Cleanup(other.Close)
		b, err := postgres.New(t.Context(), other, postgres.WithSchema(schema))
		if err != nil {
			t.Fatalf("New = %v", err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return a, b
	})
}

func TestCheckpointConformance(t *testing.T) {
	schema, pool := testSchema(t)
	statetest.TestStore(t, func(t *testing.T) state.Store {
		s, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema))
		if err != nil {
			t.Fatalf("New = %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestSignedCheckpoints(t *testing.T) {
	schema, pool := testSchema(t)
	table := pgx.Identifier{schema, "run_checkpoints"}.Sanitize()
	statetest.TestSignedStore(t,
		func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) state.Store {
			s, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema), postgres.WithCodec(m, u))
			if err != nil {
				t.Fatalf("New = %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		func(t *testing.T, runID string, edit func([]byte) []byte) {
			ctx := t.Context()
			var data []byte
			if err := pool.QueryRow(ctx, `SELECT data FROM `+table+` WHERE run_id = $1`, runID).Scan(&data); err != nil {
				t.Fatalf("read checkpoint %s: %v", runID, err)
			}
			if _, err := pool.Exec(ctx, `UPDATE `+table+` SET data = $2 WHERE run_id = $1`, runID, edit(data)); err != nil {
				t.Fatalf("UPDATE checkpoint %s: %v", runID, err)
			}
		})
}
