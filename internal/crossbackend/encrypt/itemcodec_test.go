package encrypt_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
)

// TestPostgresItemCodecSameForm is TestItemCodecSameForm on PostgreSQL:
// a session written through the wrapper reads with the keyring as the
// store's item codec and the other way round, one sealed form, a retried
// append through the other recognized as a retry, and the item codec's
// rows sealed (the store seals them: the wrapper sees the codec).
func TestPostgresItemCodecSameForm(t *testing.T) {
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
		raw := func() string {
			rows, err := pool.Query(t.Context(), "SELECT raw FROM "+pgx.Identifier{schema}.Sanitize()+".session_items ORDER BY session_id, place, seq")
			if err != nil {
				t.Fatal(err)
			}
			all, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, r := range all {
				b.Write(r)
				b.WriteByte('\n')
			}
			return b.String()
		}
		want := fill(t, open(writer))
		before := raw()
		if strings.Contains(before, "4111") || !strings.Contains(before, "turnkit_sealed") {
			t.Fatalf("item codec %v wrote the items unsealed:\n%s", writer, before)
		}
		reader := open(!writer)
		got, err := reader.List(t.Context(), "session-1", 0)
		if err != nil || len(got) != len(want) {
			t.Fatalf("item codec %v wrote, %v read: List = %d items, %v; want %d", writer, !writer, len(got), err, len(want))
		}
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Errorf("item %d = %s, want %s", i, got[i], want[i])
			}
		}
		if err := reader.Append(t.Context(), "session-1", "r0", want); err != nil {
			t.Errorf("the append retried through the other = %v", err)
		}
		if raw() != before {
			t.Errorf("the retried append changed the stored items")
		}
	}
}

// TestRedisItemCodecSameForm is TestPostgresItemCodecSameForm on Redis:
// the members of the session's sorted sets, as stored.
func TestRedisItemCodecSameForm(t *testing.T) {
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
		if strings.Contains(before, "4111") || !strings.Contains(before, "turnkit_sealed") {
			t.Fatalf("item codec %v wrote the items unsealed:\n%q", writer, before)
		}
		reader := open(!writer)
		got, err := reader.List(t.Context(), "session-1", 0)
		if err != nil || len(got) != len(want) {
			t.Fatalf("item codec %v wrote, %v read: List = %d items, %v; want %d", writer, !writer, len(got), err, len(want))
		}
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Errorf("item %d = %s, want %s", i, got[i], want[i])
			}
		}
		if err := reader.Append(t.Context(), "session-1", "r0", want); err != nil {
			t.Errorf("the append retried through the other = %v", err)
		}
		if members() != before {
			t.Errorf("the retried append changed the stored items")
		}
	}
}
