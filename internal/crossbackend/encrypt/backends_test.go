package encrypt_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// A backend opens sealed stores over one database: sessions and
// checkpoints, and the raw (unsealed) view of the same data for the
// tests that look at what is at rest.
type backend struct {
	name string
	// open returns the sealed session and checkpoint stores (one value
	// for the database backends) over one database shared by every call
	// of the test, with kr's codec and optional signing options.
	open func(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store)
}

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// backends returns the backends under test; the servers' ones skip (or
// fail in CI) without their server.
func backends() []backend {
	return []backend{
		{"memory", openMemory()},
		{"sqlite", openSQLite},
		{"sqlite-itemcodec", openSQLiteItemCodec},
		{"postgres", openPostgres},
		{"postgres-itemcodec", openPostgresItemCodec},
		{"redis", openRedis},
		{"redis-itemcodec", openRedisItemCodec},
	}
}

func openMemory() func(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store) {
	return func(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store) {
		km, ku := kr.Codec()
		ss := encrypt.WrapSessions(memory.New(), kr)
		rs := encrypt.WrapRuns(memstore.New(memstore.WithCodec(append(m, km...), append(u, ku...))), kr, ss)
		return ss, rs
	}
}

func openSQLite(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store) {
	km, ku := kr.Codec()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "sealed.db"), sqlite.WithCodec(append(m, km...), append(u, ku...)))
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s := encrypt.Wrap(db, kr)
	return s, s
}

// openSQLiteItemCodec is openSQLite with the keyring as the store's item
// codec: the store seals and opens the items itself.
func openSQLiteItemCodec(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store) {
	km, ku := kr.Codec()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "sealed.db"), sqlite.WithCodec(append(m, km...), append(u, ku...)), sqlite.WithItemCodec(kr))
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s := encrypt.Wrap(db, kr)
	return s, s
}

func openPostgres(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store) {
	return openPostgresWith(t, kr, m, u, false)
}

// openPostgresItemCodec is openPostgres with the keyring as the store's
// item codec: the store seals and opens the items itself.
func openPostgresItemCodec(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store) {
	return openPostgresWith(t, kr, m, u, true)
}

func openPostgresWith(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption, itemCodec bool) (session.Store, state.Store) {
	url := testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("pgxpool.New = %v", err)
	}
	schema := "turnkit_test_" + newID()
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		pool.Close()
	})
	km, ku := kr.Codec()
	opts := []postgres.Option{postgres.WithSchema(schema), postgres.WithCodec(append(m, km...), append(u, ku...))}
	if itemCodec {
		opts = append(opts, postgres.WithItemCodec(kr))
	}
	db, err := postgres.New(t.Context(), pool, opts...)
	if err != nil {
		t.Fatalf("postgres.New = %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s := encrypt.Wrap(db, kr)
	return s, s
}

func openRedis(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store) {
	return openRedisWith(t, kr, m, u, false)
}

// openRedisItemCodec is openRedis with the keyring as the store's item
// codec: the store seals and opens the items itself.
func openRedisItemCodec(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) (session.Store, state.Store) {
	return openRedisWith(t, kr, m, u, true)
}

func openRedisWith(t *testing.T, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption, itemCodec bool) (session.Store, state.Store) {
	client, prefix := redisClient(t)
	km, ku := kr.Codec()
	opts := []redis.Option{redis.WithPrefix(prefix), redis.WithCodec(append(m, km...), append(u, ku...))}
	if itemCodec {
		opts = append(opts, redis.WithItemCodec(kr))
	}
	db := redis.New(client, opts...)
	s := encrypt.Wrap(db, kr)
	return s, s
}

// redisClient returns a client of the test server and a fresh key
// prefix, whose keys are deleted when the test ends.
func redisClient(t *testing.T) (*goredis.Client, string) {
	o, err := goredis.ParseURL(testenv.ServerURL(t, "TURNKIT_REDIS_URL"))
	if err != nil {
		t.Fatalf("ParseURL = %v", err)
	}
	client := goredis.NewClient(o)
	prefix := "tkenc" + newID() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for _, k := range keys {
			_ = client.Del(ctx, k).Err()
		}
		client.Close()
	})
	return client, prefix
}
