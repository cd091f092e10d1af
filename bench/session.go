package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite" // the raw driver of the sqlite baseline

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

func init() { extraScenarios = append(extraScenarios, SessionScenarios) }

// commitItems returns the k-th commit of the session scenarios: a tool call
// and its output, as persistence appends them when a tool returns.
func commitItems(k int) []state.Item {
	id := strconv.Itoa(k)
	seq := int64(2*k + 1)
	return []state.Item{
		state.ToolCall("fc_"+id, "call_"+id, ToolName, `{}`).WithSeq(seq),
		state.ToolOutput("call_"+id, ToolName, ToolOutput).WithSeq(seq + 1),
	}
}

// StoreCommits times session.Store.Append of one commit (two items) per
// iteration, into one growing session.
func StoreCommits(b *testing.B, open func(b *testing.B) session.Store) {
	ctx := context.Background()
	store := open(b)
	defer store.Close()
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		if err := store.Append(ctx, benchSession, "bench", commitItems(k)); err != nil {
			b.Fatal(err)
		}
		k++
	}
}

// insertFunc writes one commit with a raw driver.
type insertFunc func(ctx context.Context, items []state.Item) error

// RawCommits times a raw driver doing the same inserts, one commit per
// iteration: one transaction inserting each item, skipping one already
// stored.
func RawCommits(b *testing.B, open func(b *testing.B) insertFunc) {
	ctx := context.Background()
	insert := open(b)
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		if err := insert(ctx, commitItems(k)); err != nil {
			b.Fatal(err)
		}
		k++
	}
}

func openSQLiteStore(b *testing.B) session.Store {
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "store.db"))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// openSQLiteRaw opens database/sql on modernc.org/sqlite with the store's
// settings (WAL, synchronous NORMAL, BEGIN IMMEDIATE) and one table keyed
// like the store's.
func openSQLiteRaw(b *testing.B) insertFunc {
	dsn := filepath.Join(b.TempDir(), "raw.db") + "?_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE items (session_id TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
		kind TEXT NOT NULL, name TEXT NOT NULL, raw BLOB NOT NULL, PRIMARY KEY (session_id, run_id, seq)) WITHOUT ROWID`); err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, items []state.Item) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, it := range items {
			if _, err := tx.ExecContext(ctx, `INSERT INTO items (session_id, run_id, seq, kind, name, raw) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, benchSession, "bench", it.Seq(), it.Kind().String(), it.Name(), it.AppendRaw(nil)); err != nil {
				return err
			}
		}
		return tx.Commit()
	}
}

// pgSchema is this process's schema for the PostgreSQL scenarios, dropped
// when a scenario ends.
func pgSchema(kind string) string { return "turnkit_bench_" + kind + "_" + strconv.Itoa(os.Getpid()) }

func dropSchema(b *testing.B, url, schema string) {
	b.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
	})
}

func openPostgresStore(url string) func(b *testing.B) session.Store {
	return func(b *testing.B) session.Store {
		schema := pgSchema("store")
		dropSchema(b, url, schema)
		s, err := postgres.Open(context.Background(), url, postgres.WithSchema(schema))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
}

// openPostgresRaw opens a pgx pool and one table keyed like the store's.
func openPostgresRaw(url string) func(b *testing.B) insertFunc {
	return func(b *testing.B) insertFunc {
		ctx := context.Background()
		schema := pgSchema("raw")
		dropSchema(b, url, schema)
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema+"; CREATE TABLE "+schema+`.items (
			session_id TEXT NOT NULL, run_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
			raw JSONB NOT NULL, PRIMARY KEY (session_id, run_id, seq))`); err != nil {
			b.Fatal(err)
		}
		insert := "INSERT INTO " + schema + `.items (session_id, run_id, seq, kind, name, raw) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT DO NOTHING`
		return func(ctx context.Context, items []state.Item) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				for _, it := range items {
					if _, err := tx.Exec(ctx, insert, benchSession, "bench", it.Seq(), it.Kind().String(), it.Name(), it.AppendRaw(nil)); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
}

// redisPrefix is this process's key prefix for the Redis scenarios, whose
// keys are deleted when a scenario ends.
func redisPrefix(kind string) string {
	return "turnkit-bench:" + kind + ":" + strconv.Itoa(os.Getpid()) + ":"
}

func dropKeys(b *testing.B, client *goredis.Client, prefix string) {
	b.Cleanup(func() {
		ctx := context.Background()
		keys, err := client.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = client.Del(ctx, keys...).Err()
		}
		if err != nil {
			b.Errorf("delete keys %s*: %v", prefix, err)
		}
	})
}

func redisClient(b *testing.B, url string) *goredis.Client {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	client := goredis.NewClient(opt)
	b.Cleanup(func() { client.Close() })
	return client
}

func openRedisStore(url string) func(b *testing.B) session.Store {
	return func(b *testing.B) session.Store {
		prefix := redisPrefix("store")
		dropKeys(b, redisClient(b, url), prefix)
		s, err := redis.Open(context.Background(), url, redis.WithPrefix(prefix))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
}

// openRedisRaw writes each commit as one MULTI/EXEC of ZADD NX per item
// into a sorted set scored by Seq.
func openRedisRaw(url string) func(b *testing.B) insertFunc {
	return func(b *testing.B) insertFunc {
		client := redisClient(b, url)
		prefix := redisPrefix("raw")
		dropKeys(b, client, prefix)
		key := prefix + benchSession
		return func(ctx context.Context, items []state.Item) error {
			_, err := client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				for _, it := range items {
					member := "bench:" + strconv.FormatInt(it.Seq(), 10) + ":" + string(it.AppendRaw(nil))
					p.ZAddNX(ctx, key, goredis.Z{Score: float64(it.Seq()), Member: member})
				}
				return nil
			})
			return err
		}
	}
}

// backendMissing says why a backend's scenarios cannot run, or "".
func backendMissing(env string) string {
	if os.Getenv(env) != "" {
		return ""
	}
	return env + ` is not set; run eval "$(.ci/services start)" first`
}

// SessionScenarios returns one commit per iteration for each session
// backend, each against its raw driver doing the same inserts:
// session/memory (no raw baseline), session/sqlite against database/sql
// on modernc.org/sqlite, session/postgres against pgx, session/redis
// against go-redis. PostgreSQL and Redis read TURNKIT_POSTGRES_URL and
// TURNKIT_REDIS_URL and are skipped without them.
func SessionScenarios() []Scenario {
	pgURL, redisURL := os.Getenv("TURNKIT_POSTGRES_URL"), os.Getenv("TURNKIT_REDIS_URL")
	pair := func(backend, skip string, store func(*testing.B) session.Store, raw func(*testing.B) insertFunc) []Scenario {
		rawName := fmt.Sprintf("session/%s/raw-driver", backend)
		out := []Scenario{
			{Name: rawName, Group: "session", PerOp: 1, Unit: "commit", Skip: skip},
			{Name: fmt.Sprintf("session/%s/store", backend), Group: "session", Baseline: rawName, PerOp: 1, Unit: "commit", Skip: skip},
		}
		if skip == "" {
			out[0].Bench = func(b *testing.B) { RawCommits(b, raw) }
			out[1].Bench = func(b *testing.B) { StoreCommits(b, store) }
		}
		return out
	}
	out := []Scenario{{Name: "session/memory/store", Group: "session", PerOp: 1, Unit: "commit", Bench: func(b *testing.B) {
		StoreCommits(b, func(*testing.B) session.Store { return memory.New() })
	}}}
	out = append(out, pair("sqlite", "", openSQLiteStore, openSQLiteRaw)...)
	out = append(out, pair("postgres", backendMissing("TURNKIT_POSTGRES_URL"), openPostgresStore(pgURL), openPostgresRaw(pgURL))...)
	out = append(out, pair("redis", backendMissing("TURNKIT_REDIS_URL"), openRedisStore(redisURL), openRedisRaw(redisURL))...)
	return out
}
