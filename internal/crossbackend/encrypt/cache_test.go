package encrypt_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// twoHandles opens two sealed handles of one database, each with its own
// keyring over provider p (two processes sharing the key records).
type twoHandles func(t *testing.T, p encrypt.KeyProvider) (a, b session.Store)

// handleBackends returns, per backend, how to open two sealed handles of
// one database; the servers' ones skip (or fail in CI) without their
// server.
func handleBackends() []struct {
	name string
	open twoHandles
} {
	return []struct {
		name string
		open twoHandles
	}{
		{"memory", memoryHandles},
		{"sqlite", sqliteHandles(false)},
		{"sqlite-itemcodec", sqliteHandles(true)},
		{"postgres", postgresHandles(false)},
		{"postgres-itemcodec", postgresHandles(true)},
		{"redis", redisHandles(false)},
		{"redis-itemcodec", redisHandles(true)},
	}
}

func memoryHandles(t *testing.T, p encrypt.KeyProvider) (session.Store, session.Store) {
	items, keys := memory.New(), encrypt.MemoryKeys()
	t.Cleanup(func() { _ = items.Close() })
	a := encrypt.WrapSessions(items, encrypt.NewKeyring(p, encrypt.WithKeyStore(keys)))
	b := encrypt.WrapSessions(items, encrypt.NewKeyring(p, encrypt.WithKeyStore(keys)))
	return a, b
}

func sqliteHandles(itemCodec bool) twoHandles {
	return func(t *testing.T, p encrypt.KeyProvider) (session.Store, session.Store) {
		path := filepath.Join(t.TempDir(), "sealed.db")
		open := func() session.Store {
			kr := encrypt.NewKeyring(p)
			opts := []sqlite.Option{sqlite.WithCodec(kr.Codec())}
			if itemCodec {
				opts = append(opts, sqlite.WithItemCodec(kr))
			}
			db, err := sqlite.Open(path, opts...)
			if err != nil {
				t.Fatalf("sqlite.Open = %v", err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return encrypt.Wrap(db, kr)
		}
		return open(), open()
	}
}

func postgresHandles(itemCodec bool) twoHandles {
	return func(t *testing.T, p encrypt.KeyProvider) (session.Store, session.Store) {
		return openPostgresHandles(t, p, itemCodec)
	}
}

func openPostgresHandles(t *testing.T, p encrypt.KeyProvider, itemCodec bool) (session.Store, session.Store) {
	url := testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
	schema := "turnkit_test_" + newID()
	open := func() session.Store {
		pool, err := pgxpool.New(context.Background(), url)
		if err != nil {
			t.Fatalf("pgxpool.New = %v", err)
		}
		t.Cleanup(pool.Close)
		kr := encrypt.NewKeyring(p)
		opts := []postgres.Option{postgres.WithSchema(schema), postgres.WithCodec(kr.Codec())}
		if itemCodec {
			opts = append(opts, postgres.WithItemCodec(kr))
		}
		db, err := postgres.New(t.Context(), pool, opts...)
		if err != nil {
			t.Fatalf("postgres.New = %v", err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return encrypt.Wrap(db, kr)
	}
	a := open()
	t.Cleanup(func() {
		pool, err := pgxpool.New(context.Background(), url)
		if err != nil {
			t.Errorf("pgxpool.New = %v", err)
			return
		}
		defer pool.Close()
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return a, open()
}

func redisHandles(itemCodec bool) twoHandles {
	return func(t *testing.T, p encrypt.KeyProvider) (session.Store, session.Store) {
		return openRedisHandles(t, p, itemCodec)
	}
}

func openRedisHandles(t *testing.T, p encrypt.KeyProvider, itemCodec bool) (session.Store, session.Store) {
	client, prefix := redisClient(t)
	o, err := goredis.ParseURL(testenv.ServerURL(t, "TURNKIT_REDIS_URL"))
	if err != nil {
		t.Fatalf("ParseURL = %v", err)
	}
	other := goredis.NewClient(o)
	t.Cleanup(func() { _ = other.Close() })
	open := func(c *goredis.Client) session.Store {
		kr := encrypt.NewKeyring(p)
		opts := []redis.Option{redis.WithPrefix(prefix), redis.WithCodec(kr.Codec())}
		if itemCodec {
			opts = append(opts, redis.WithItemCodec(kr))
		}
		return encrypt.Wrap(redis.New(c, opts...), kr)
	}
	return open(client), open(other)
}

// TestCache runs the history cache's two-handle suite with encryption on,
// on every backend: a cache over a sealed handle reads changes through
// the wrapper (opening only the items written since its last read) and
// returns what the sealed store's ListBefore returns.
//
// Checked to fail without it: the wrapper was no session.ChangeReader, so
// persistence's cache was bypassed (and the suite skipped).
func TestCache(t *testing.T) {
	for _, b := range handleBackends() {
		t.Run(b.name, func(t *testing.T) {
			p := encrypt.NewMemoryProvider("kek-1")
			sessiontest.TestCache(t, func(t *testing.T) (session.Store, session.Store) {
				x, y := b.open(t, p)
				if _, ok := y.(session.ChangeReader); !ok {
					t.Fatalf("%T is not a session.ChangeReader: a history cache over it reads everything", y)
				}
				return x, y
			})
		})
	}
}

// TestCacheOverPlainWrapper: a sealed wrapper over a store that reads no
// changes says so with errors.ErrUnsupported, and a history cache over it
// reads every history from the store instead of failing.
func TestCacheOverPlainWrapper(t *testing.T) {
	items := memory.New()
	t.Cleanup(func() { _ = items.Close() })
	kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-1"), encrypt.WithKeyStore(encrypt.MemoryKeys()))
	s := encrypt.WrapSessions(struct{ session.Store }{items}, kr)
	if _, err := s.ReadChanges(t.Context(), "s", session.ChangeQuery{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("ReadChanges over a store without = %v, want errors.ErrUnsupported", err)
	}
	if err := s.Append(t.Context(), "s", "r", []state.Item{state.UserMessage("secret").WithSeq(1)}); err != nil {
		t.Fatal(err)
	}
	c := session.NewCache(s, 0)
	h, err := c.ListBefore(t.Context(), "s", "next", session.HistoryQuery{})
	if err != nil || len(h.Items) != 1 || h.Items[0].Text() != "secret" {
		t.Fatalf("cached ListBefore = %v, %v; want the opened item", h.Items, err)
	}
}
