package encrypt_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// BenchmarkItemCodec is what a sealed session costs on PostgreSQL and
// Redis with the wrapper sealing the items and with the keyring as the
// store's item codec: per iteration, a tool turn's append (a call and its
// output) and a read of the session's last 20 items, as persistence
// without its cache makes them.
func BenchmarkItemCodec(b *testing.B) {
	for _, be := range []string{"postgres", "redis"} {
		for _, codec := range []bool{false, true} {
			name := be + "/wrapper"
			if codec {
				name = be + "/itemcodec"
			}
			b.Run(name, func(b *testing.B) {
				s := openBenchBackend(b, be, codec)
				benchAppendRead(b, s)
			})
		}
	}
}

func openBenchBackend(b *testing.B, be string, codec bool) *encrypt.Store {
	kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-1"))
	ctx := context.Background()
	switch be {
	case "postgres":
		pool, err := pgxpool.New(ctx, testenv.ServerURL(b, "TURNKIT_POSTGRES_URL"))
		if err != nil {
			b.Fatal(err)
		}
		schema := "turnkit_bench_" + newID()
		b.Cleanup(func() {
			_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			pool.Close()
		})
		opts := []postgres.Option{postgres.WithSchema(schema), postgres.WithCodec(kr.Codec())}
		if codec {
			opts = append(opts, postgres.WithItemCodec(kr))
		}
		db, err := postgres.New(ctx, pool, opts...)
		if err != nil {
			b.Fatal(err)
		}
		return encrypt.Wrap(db, kr)
	default:
		o, err := goredis.ParseURL(testenv.ServerURL(b, "TURNKIT_REDIS_URL"))
		if err != nil {
			b.Fatal(err)
		}
		client := goredis.NewClient(o)
		prefix := "tkbench" + newID() + ":"
		b.Cleanup(func() {
			keys, _ := client.Keys(context.Background(), prefix+"*").Result()
			for _, k := range keys {
				_ = client.Del(context.Background(), k).Err()
			}
			_ = client.Close()
		})
		opts := []redis.Option{redis.WithPrefix(prefix), redis.WithCodec(kr.Codec())}
		if codec {
			opts = append(opts, redis.WithItemCodec(kr))
		}
		return encrypt.Wrap(redis.New(client, opts...), kr)
	}
}

func benchAppendRead(b *testing.B, s *encrypt.Store) {
	ctx := context.Background()
	seq := int64(0)
	turn := func() []state.Item {
		seq += 2
		id := fmt.Sprint("call_", seq)
		return []state.Item{
			state.ToolCall("fc", id, "lookup", `{"q":"the weather in Paris tomorrow"}`).WithSeq(seq - 1),
			state.ToolOutput(id, "lookup", `{"forecast":"sunny, 21 degrees","wind":"light"}`).WithSeq(seq),
		}
	}
	for range 10 {
		if err := s.Append(ctx, "s", "r", turn()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Append(ctx, "s", "r", turn()); err != nil {
			b.Fatal(err)
		}
		if _, err := s.ListBefore(ctx, "s", "next", session.HistoryQuery{Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
}
