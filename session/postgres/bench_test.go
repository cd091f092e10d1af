package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
)

var (
	sinkErr  error
	benchRun atomic.Int64 // each benchmark invocation appends to a new session
)

func benchSession() string { return "bench-" + strconv.FormatInt(benchRun.Add(1), 10) }

// BenchmarkAppend compares a committed append of three items through the
// Store with pgx inserting the same three rows on the same server, in the
// same run, at the driver's floor: one multi-row INSERT, which is its own
// transaction, in one round trip, as the Store's append is ("raw", a table
// with its primary key alone, turnbench's baseline). (Until 2026-12-04 the
// raw side wrapped it in BEGIN and COMMIT, three round trips, and the
// Store, at one, looked as fast as the raw driver.) "raw-same-writes" has
// pgx write what the Store's commit writes, in one round trip and one
// transaction: the session head's next write stamp, and the rows into the
// store's own table and indexes, each with its call ID, the call its
// output answers and the stamp, computed in Go rather than read. It parts
// the Store's cost into its schema's and its own.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	schema, pool := testSchema(b)
	b.Run("turnkit", func(b *testing.B) {
		s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		sid := benchSession()
		var i int64
		for b.Loop() {
			sinkErr = s.Append(ctx, sid, "run", sessiontest.Batch(i))
			i++
		}
		if sinkErr != nil {
			b.Fatal(sinkErr)
		}
	})
	b.Run("raw", func(b *testing.B) {
		table := pgx.Identifier{schema, "raw_items"}.Sanitize()
		if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			b.Fatal(err) // run alone (-bench Append/raw$), nothing made it
		}
		if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (session_id text, place bigint, seq bigint,
			kind text, name text, raw bytea, PRIMARY KEY (session_id, place, seq))`); err != nil {
			b.Fatal(err)
		}
		insert := `INSERT INTO ` + table + ` VALUES ($1, 1, $2, $3, $4, $5), ($1, 1, $6, $7, $8, $9), ($1, 1, $10, $11, $12, $13)`
		b.ReportAllocs()
		args0 := benchSession()
		var i int64
		for b.Loop() {
			its := sessiontest.Batch(i)
			args := []any{args0}
			for _, it := range its {
				args = append(args, it.Seq(), it.Kind().String(), it.Name(), it.Raw())
			}
			_, sinkErr = pool.Exec(ctx, insert, args...)
			i++
		}
		if sinkErr != nil {
			b.Fatal(sinkErr)
		}
	})
	b.Run("raw-same-writes", func(b *testing.B) {
		write, answered := sameWrites(b, ctx, schema, pool)
		b.ReportAllocs()
		var i int64
		for b.Loop() {
			sinkErr = write(i)
			i++
		}
		if sinkErr != nil {
			b.Fatal(sinkErr)
		}
		answered(i)
	})
}

// sameWrites returns a function that writes, with pgx, in one round trip
// and one transaction, what the Store's commit of sessiontest.Batch(i)
// writes: the session head's next write stamp, and the rows into the
// store's own table and indexes (its schema, by its own migrations), each
// with its call ID, the call its output answers and the stamp, computed in
// Go rather than read; and a function that fails b unless each of the n
// batches' outputs answers its call, as the store's would.
func sameWrites(b *testing.B, ctx context.Context, schema string, pool *pgxpool.Pool) (write func(i int64) error, answered func(n int64)) {
	if _, err := postgres.New(ctx, pool, postgres.WithSchema(schema)); err != nil {
		b.Fatal(err) // the store's schema, by its own migrations
	}
	heads, items := pgx.Identifier{schema, "session_heads"}.Sanitize(), pgx.Identifier{schema, "session_items"}.Sanitize()
	stamp := `UPDATE ` + heads + ` SET stamp = $2 WHERE session_id = $1`
	insert := `INSERT INTO ` + items + ` (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
		VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $20), ($1, 1, $8, $9, $10, $11, $12, $13, $20),
			($1, 1, $14, $15, $16, $17, $18, $19, $20)`
	sid := benchSession()
	if _, err := pool.Exec(ctx, `INSERT INTO `+heads+` (session_id, last_place) VALUES ($1, 1)`, sid); err != nil {
		b.Fatal(err)
	}
	write = func(i int64) error {
		its := sessiontest.Batch(i)
		ids, answers := rowcodec.Calls(its)
		args := []any{sid}
		for j, it := range its {
			var id []byte
			if ids[j] != nil {
				id = []byte(*ids[j])
			}
			args = append(args, it.Seq(), it.Kind().String(), it.Name(), it.AppendRaw(nil), id, answers[j])
		}
		args = append(args, i+1)
		batch := &pgx.Batch{}
		batch.Queue(stamp, sid, i+1)
		batch.Queue(insert, args...)
		return pool.SendBatch(ctx, batch).Close()
	}
	answered = func(n int64) {
		var got int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+items+` WHERE session_id = $1 AND answers = seq - 1`, sid).Scan(&got); err != nil || got != n {
			b.Fatalf("%d outputs answer their calls after %d appends (%v)", got, n, err)
		}
	}
	return write, answered
}

// BenchmarkAppendPaired times the Store's commit and raw-same-writes'
// (see BenchmarkAppend), one after the other in each
// iteration (sessiontest.AppendPaired), and reports their ratio.
func BenchmarkAppendPaired(b *testing.B) {
	ctx := context.Background()
	schema, pool := testSchema(b)
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		b.Fatal(err)
	}
	write, answered := sameWrites(b, ctx, schema, pool)
	answered(sessiontest.AppendPaired(b, s, benchSession(), write))
}

// BenchmarkCheckpointSave saves a run once per turn (a tool call and its
// output) after history items of session history and as many items of its
// own: the cost of a save, and the bytes it writes (the rows its
// transaction wrote, TOAST chunks included, the median of nine saves), must
// not grow with the history.
func BenchmarkCheckpointSave(b *testing.B) {
	ctx := context.Background()
	schema, pool := testSchema(b)
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		b.Fatal(err)
	}
	for _, history := range []int{10, 1000, 10000} {
		b.Run("history="+strconv.Itoa(history), func(b *testing.B) {
			r := ckpttest.LongRun(b, benchSession(), history)
			if err := s.Save(ctx, r); err != nil {
				b.Fatal(err)
			}
			// What a save of the whole checkpoint (the earlier format) wrote
			// at this history.
			whole, err := state.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			turn := history
			b.ReportAllocs()
			for b.Loop() {
				turn++
				ckpttest.Turn(b, r, turn)
				sinkErr = s.Save(ctx, r)
			}
			if sinkErr != nil {
				b.Fatal(sinkErr)
			}
			sizes := make([]int64, 9)
			for i := range sizes {
				turn++
				ckpttest.Turn(b, r, turn)
				if err := s.Save(ctx, r); err != nil {
					b.Fatal(err)
				}
				_, sizes[i] = written(b, pool, schema, r.ID())
			}
			slices.Sort(sizes)
			b.ReportMetric(float64(sizes[len(sizes)/2]), "B-written/save")
			b.ReportMetric(float64(len(whole)), "B-whole/save")
		})
	}
}
