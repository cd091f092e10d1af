package encrypt_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// TestPostgresItemCodecForms is TestItemCodecForms on PostgreSQL: a
// session written through the wrapper (the JSON form) and one written by
// the keyring as the store's item codec (the binary form: the store
// seals them, the wrapper sees the codec) read with the item codec; a
// retried append is recognized as one (see checkRetry across the forms).
func TestPostgresItemCodecForms(t *testing.T) {
	url := testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("pgxpool.New = %v", err)
	}
	t.Cleanup(pool.Close)
	provider := encrypt.NewMemoryProvider("kek-1")
	for _, writer := range []bool{false, true} {
		schema := "turnkit_test_" + newID()
		t.Cleanup(func() {
			_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		})
		open := func(itemCodec bool) *encrypt.Store {
			kr := encrypt.NewKeyring(provider)
			opts := []postgres.Option{postgres.WithSchema(schema), postgres.WithCodec(kr.Codec())}
			if itemCodec {
				opts = append(opts, postgres.WithItemCodec(kr))
			}
			db, err := postgres.New(t.Context(), pool, opts...)
			if err != nil {
				t.Fatalf("postgres.New = %v", err)
			}
			return encrypt.Wrap(db, kr)
		}
		raw := func() []string {
			rows, err := pool.Query(t.Context(), "SELECT raw FROM "+pgx.Identifier{schema}.Sanitize()+".session_items ORDER BY session_id, place, seq")
			if err != nil {
				t.Fatal(err)
			}
			all, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range all {
				out = append(out, string(r))
			}
			return out
		}
		want := fill(t, open(writer))
		before := raw()
		checkForms(t, writer, before)
		reader := open(true)
		checkList(t, reader, want)
		checkRetry(t, writer, reader, want)
		if !slices.Equal(raw(), before) {
			t.Errorf("the retried append changed the stored items")
		}
		if writer {
			if _, err := open(false).List(t.Context(), "session-1", 0); !errors.Is(err, session.ErrCorrupt) {
				t.Errorf("the wrapper alone read binary rows: List = %v, want session.ErrCorrupt", err)
			}
		}
	}
}

// checkRetry appends want again through reader, the item codec, to the
// session that a writer wrote (binary: the item codec; else the
// wrapper): a retry of the same form is recognized as one; PostgreSQL and
// Redis compare the stored bytes, so one across the two forms is a
// conflict (typed), and nothing is written.
func checkRetry(t *testing.T, binary bool, reader *encrypt.Store, want []state.Item) {
	t.Helper()
	err := reader.Append(t.Context(), "session-1", "r0", want)
	if binary && err != nil {
		t.Errorf("the append retried through the item codec = %v", err)
	}
	if !binary && !errors.Is(err, session.ErrConflict) {
		t.Errorf("the append of the JSON form retried through the item codec = %v, want session.ErrConflict", err)
	}
}

// TestRedisItemCodecForms is TestPostgresItemCodecForms on Redis: the
// members of the session's sorted sets, as stored.
func TestRedisItemCodecForms(t *testing.T) {
	provider := encrypt.NewMemoryProvider("kek-1")
	for _, writer := range []bool{false, true} {
		client, prefix := redisClient(t)
		open := func(itemCodec bool) *encrypt.Store {
			kr := encrypt.NewKeyring(provider)
			opts := []redis.Option{redis.WithPrefix(prefix), redis.WithCodec(kr.Codec())}
			if itemCodec {
				opts = append(opts, redis.WithItemCodec(kr))
			}
			return encrypt.Wrap(redis.New(client, opts...), kr)
		}
		members := func() string {
			keys, err := client.Keys(t.Context(), prefix+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(keys)
			var b strings.Builder
			for _, k := range keys {
				if typ, _ := client.Type(t.Context(), k).Result(); typ != "zset" || !strings.Contains(k, "session-1") {
					continue
				}
				ms, err := client.ZRange(t.Context(), k, 0, -1).Result()
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString(k + "\n" + strings.Join(ms, "\n") + "\n")
			}
			return b.String()
		}
		want := fill(t, open(writer))
		before := members()
		ms, err := client.ZRange(t.Context(), prefix+"session:{session-1}:items", 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		var items []string
		for _, m := range ms { // its position, format byte 1, its kind and tool name after their lengths, then the stored form
			rest := m[33:]
			for range 2 {
				rest = rest[1+int(rest[0]):]
			}
			items = append(items, rest)
		}
		if len(items) != len(want) {
			t.Fatalf("%d stored items, want %d:\n%q", len(items), len(want), before)
		}
		checkForms(t, writer, items)
		reader := open(true)
		checkList(t, reader, want)
		checkRetry(t, writer, reader, want)
		if members() != before {
			t.Errorf("the retried append changed the stored items")
		}
		if writer {
			if _, err := open(false).List(t.Context(), "session-1", 0); !errors.Is(err, session.ErrCorrupt) {
				t.Errorf("the wrapper alone read binary rows: List = %v, want session.ErrCorrupt", err)
			}
		}
	}
}
