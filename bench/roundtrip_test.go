package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	msqlite "modernc.org/sqlite"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// The floor of a crash-safe tool turn, in durable writes: a call that must
// not run twice needs its response saved before it runs (the save that
// keeps its call ID, hence its idempotency key) and its output committed
// with the next save (SaveAppend); a retryable call needs the commit
// alone. Every backend that keeps sessions and checkpoints in one store
// makes each durable write one round trip (one transaction on SQLite).
const (
	floorToolTurn            = 2
	floorRetryableToolTurn   = 1
	floorPersistenceToolTurn = 1 // persistence alone: the commit, no checkpoint
)

// A countedStore is a backend store whose round trips to its server (on
// SQLite, its committed transactions) are counted, for the whole process.
type countedStore interface {
	session.Store
	state.Store
}

// A tripBackend opens a counted store, or says why it cannot run here.
type tripBackend struct {
	name string
	skip string
	open func(t *testing.T, trips *atomic.Int64) countedStore
}

// sqliteCommits counts the transactions committed on the SQLite files whose
// paths are registered here, by the driver's commit hook.
var sqliteCommits struct {
	once  sync.Once
	files sync.Map // path → *atomic.Int64, stored before the store opens
}

func hookSQLiteCommits() {
	sqliteCommits.once.Do(func() {
		msqlite.RegisterConnectionHook(func(conn msqlite.ExecQuerierContext, dsn string) error {
			path, _, _ := strings.Cut(dsn, "?")
			n, ok := sqliteCommits.files.Load(path)
			if !ok {
				return nil
			}
			conn.(msqlite.HookRegisterer).RegisterCommitHook(func() int32 {
				n.(*atomic.Int64).Add(1)
				return 0 // commit
			})
			return nil
		})
	})
}

// pgTracer counts a pgx connection's round trips: a query or an exec, a
// batch (pipelined: one round trip whatever it holds) and a prepare of a
// statement the connection prepared before (its cache lost it). A
// statement's first prepare on a connection is a one-time cost, as a
// batch's is, which no trace shows: the store's statements for each
// number of pieces and items are each prepared at their first use.
type pgTracer struct {
	n        *atomic.Int64
	prepared *sync.Map // struct{*pgx.Conn; string} → struct{}
}

func (tr pgTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	tr.n.Add(1)
	return ctx
}
func (pgTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (tr pgTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	tr.n.Add(1)
	return ctx
}
func (pgTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (pgTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (tr pgTracer) TracePrepareStart(ctx context.Context, conn *pgx.Conn, data pgx.TracePrepareStartData) context.Context {
	type key struct {
		conn *pgx.Conn
		sql  string
	}
	if _, again := tr.prepared.LoadOrStore(key{conn, data.SQL}, struct{}{}); again {
		tr.n.Add(1)
	}
	return ctx
}
func (pgTracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// redisCounter counts a go-redis client's round trips: a command, or a
// pipeline (a MULTI/EXEC transaction too) as one.
type redisCounter struct{ n *atomic.Int64 }

func (redisCounter) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (c redisCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c redisCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

func tripBackends() []tripBackend {
	pgURL, redisURL := os.Getenv("TURNKIT_POSTGRES_URL"), os.Getenv("TURNKIT_REDIS_URL")
	bs := []tripBackend{
		{name: "sqlite", open: func(t *testing.T, trips *atomic.Int64) countedStore {
			hookSQLiteCommits()
			path := filepath.Join(t.TempDir(), "trips.db")
			sqliteCommits.files.Store(path, trips)
			s, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{name: "postgres", open: func(t *testing.T, trips *atomic.Int64) countedStore {
			cfg, err := pgxpool.ParseConfig(pgURL)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.Tracer = pgTracer{n: trips, prepared: new(sync.Map)}
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			s, err := postgres.New(context.Background(), pool, postgres.WithSchema("turnbench_trips"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{name: "redis", open: func(t *testing.T, trips *atomic.Int64) countedStore {
			opts, err := goredis.ParseURL(redisURL)
			if err != nil {
				t.Fatal(err)
			}
			client := goredis.NewClient(opts)
			client.AddHook(redisCounter{trips})
			t.Cleanup(func() { client.Close() })
			return redis.New(client, redis.WithPrefix("turnbench-trips:"))
		}},
	}
	if pgURL == "" {
		bs[1].skip = "TURNKIT_POSTGRES_URL is not set"
	}
	if redisURL == "" {
		bs[2].skip = "TURNKIT_REDIS_URL is not set"
	}
	return bs
}

// TestCrashSafeRoundTrips runs the crash-safe chain (the checkpointer
// wired with its session, one store for both) on each backend and counts
// the round trips between one tool call and the next: one whole tool turn
// (the commit of the previous call's items, the model call, the save
// before the call). It fails on any turn above the floor: 2 for a tool
// that must not run twice, 1 for a retryable one, and 1 for persistence
// alone (the commit). The counts do not depend on the machine's speed, so
// this is a test, not a benchmark.
func TestCrashSafeRoundTrips(t *testing.T) {
	const toolTurns = 6
	chains := []struct {
		name  string
		floor int64
		wire  func(store countedStore) pipeline.Middleware
	}{
		{"checkpoint", floorToolTurn, func(store countedStore) pipeline.Middleware {
			return checkpoint.New(store, checkpoint.WithSession(store)).Middleware()
		}},
		{"checkpoint-retryable", floorRetryableToolTurn, func(store countedStore) pipeline.Middleware {
			return checkpoint.New(store, checkpoint.WithSession(store),
				checkpoint.WithRetryableTools(func(*pipeline.ToolCall) bool { return true })).Middleware()
		}},
		{"persistence", floorPersistenceToolTurn, func(store countedStore) pipeline.Middleware {
			return persistence.Middleware(store)
		}},
	}
	for _, be := range tripBackends() {
		for _, ch := range chains {
			floor, name := ch.floor, be.name+"/"+ch.name
			t.Run(name, func(t *testing.T) {
				if be.skip != "" {
					if os.Getenv("TURNKIT_REQUIRE_BACKENDS") != "" {
						t.Fatal(be.skip)
					}
					t.Skip(be.skip)
				}
				var trips atomic.Int64
				store := be.open(t, &trips)
				if ch.name != "persistence" && !checkpoint.New(store, checkpoint.WithSession(store)).Atomic() {
					t.Fatal("the checkpointer does not save and append in one transaction")
				}
				// at[k] is the count when the tool's call k began.
				var at []int64
				tool := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) {
					at = append(at, trips.Load())
					return "ok", nil
				})
				steps := make([]scripted.Step, 0, toolTurns+1)
				for range toolTurns {
					steps = append(steps, scripted.Respond(scripted.Call("echo", `{}`)))
				}
				agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{tool}, Model: scripted.New(append(steps, scripted.Reply("done"))...)}
				runner := pipeline.NewRunner(pipeline.WithMiddleware(ch.wire(store)))
				ctx := context.Background()
				id := fmt.Sprintf("trips-%s-%d", strings.ReplaceAll(name, "/", "-"), os.Getpid())
				if err := store.Clear(ctx, id); err != nil {
					t.Fatal(err)
				}
				res, err := runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithSessionID(id), pipeline.WithRunID(id))
				if err != nil || res.FinalOutput() != "done" {
					t.Fatalf("Run = %+v, %v", res, err)
				}
				if len(at) != toolTurns {
					t.Fatalf("the tool ran %d times, want %d", len(at), toolTurns)
				}
				// The first two turns also warm the connection (scripts
				// loaded, the run placed in the session): the steady state
				// is the rest. A statement's first prepare on a
				// PostgreSQL connection is not counted (see pgTracer).
				const warm = 2
				var per []int64
				for k := warm; k < len(at); k++ {
					per = append(per, at[k]-at[k-1])
				}
				t.Logf("round trips per tool turn from turn %d: %v (floor %d)", warm+1, per, floor)
				for k, n := range per {
					if n > floor {
						t.Errorf("tool turn %d made %d round trips; the floor is %d", k+warm+1, n, floor)
					}
				}
				if err := store.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
				if err := store.Clear(ctx, id); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
