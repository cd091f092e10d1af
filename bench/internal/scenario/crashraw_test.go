package scenario

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/state"
)

// TestRecordTurnWrites checks that the raw rows replay steady crash-safe
// tool turns: in each, a save of the head and pieces before the tool (the
// response's model call and tool call, the previous turn's output), then
// a commit of the head with the call and its output appended; and that the
// two recorded turns are consecutive (the second's pieces and items are
// the first's moved on by one turn, see shifted), with heads of their own.
func TestRecordTurnWrites(t *testing.T) {
	ws := recordTurnWrites(t, 10)
	for k, w := range ws {
		if len(w.save.head) == 0 || len(w.commit.head) == 0 {
			t.Fatalf("turn %d: a save without a head: %+v", k, w)
		}
		var items int
		for _, p := range w.save.pieces {
			if p.Seq > 0 {
				items++
			}
		}
		if items != 2 || len(w.save.pieces) != 3 {
			t.Errorf("turn %d: the save before the tool writes %d pieces (%d items), want 3: the model call, the call, the previous output", k, len(w.save.pieces), items)
		}
		if len(w.items) != 2 || w.items[0].Kind() != state.KindToolCall || w.items[1].Kind() != state.KindToolOutput {
			t.Errorf("turn %d: the commit appends %v, want the tool call and its output", k, w.items)
		}
	}
	for i, p := range ws[1].save.pieces {
		if i < len(ws[0].save.pieces) && p.Seq != shifted(ws[0].save.pieces[i].Seq, 1) {
			t.Errorf("the second turn's piece %d is at %d, want %d: the turns are not consecutive", i, p.Seq, shifted(ws[0].save.pieces[i].Seq, 1))
		}
	}
	for i, it := range ws[1].items {
		if it.Seq() != shifted(ws[0].items[i].Seq(), 1) {
			t.Errorf("the second turn's item %d is at %d, want %d: the turns are not consecutive", i, it.Seq(), shifted(ws[0].items[i].Seq(), 1))
		}
	}
	if bytes.Equal(ws[0].commit.head, ws[1].save.head) || bytes.Equal(ws[0].save.head, ws[1].save.head) {
		t.Error("the two turns' saves write the same head")
	}
}

// TestRawDriversWrite runs three tool turns on each raw driver whose
// server is here and counts what it stored: every piece and item of each
// turn at positions of its own, and the head of the last commit.
func TestRawDriversWrite(t *testing.T) {
	ctx := context.Background()
	ws := recordTurnWrites(t, 10)
	const turns = 3
	for name, open := range rawDrivers {
		t.Run(name, func(t *testing.T) {
			if name == "postgres" && os.Getenv("TURNKIT_POSTGRES_URL") == "" || name == "redis" && os.Getenv("TURNKIT_REDIS_URL") == "" {
				t.Skip("no server")
			}
			drv := open(t)
			defer drv.close()
			if err := drv.seed(ctx, makeHistory(10)); err != nil {
				t.Fatal(err)
			}
			if err := drv.reset(ctx, ws[0].save.head); err != nil {
				t.Fatal(err)
			}
			var wantPieces, wantItems int
			for j := range turns {
				if err := ws.play(ctx, drv, j); err != nil {
					t.Fatalf("turn %d: %v", j, err)
				}
				w := &ws[j%2]
				wantPieces += len(w.save.pieces) + len(w.commit.pieces)
				wantItems += len(w.items)
			}
			pieces, items, version := rawCounts(t, drv)
			if pieces != wantPieces {
				t.Errorf("%d pieces stored, want %d", pieces, wantPieces)
			}
			if want := 10 + wantItems; items != want {
				t.Errorf("%d session items stored, want %d", items, want)
			}
			if want := rawVersion(turns-1) + 1; version != want {
				t.Errorf("head version %d, want %d", version, want)
			}
		})
	}
}

// rawCounts reads back what drv stored: the run's pieces, the session's
// items and the head's version.
func rawCounts(t *testing.T, drv rawDriver) (pieces, items int, version int64) {
	ctx := context.Background()
	var err error
	switch d := drv.(type) {
	case *rawSQLite:
		err = d.db.QueryRow(`SELECT (SELECT count(*) FROM run_checkpoint_items), (SELECT count(*) FROM session_items),
			(SELECT version FROM run_checkpoints WHERE run_id = ?)`, rawRunID).Scan(&pieces, &items, &version)
	case *rawPostgres:
		s := pgx.Identifier{"turnbench_raw"}.Sanitize()
		err = d.pool.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s.run_checkpoint_items), (SELECT count(*) FROM %[1]s.session_items),
			(SELECT version FROM %[1]s.run_checkpoints WHERE run_id = $1)`, s), rawRunID).Scan(&pieces, &items, &version)
	case *rawRedis:
		var n int64
		n, err = d.client.HLen(ctx, d.itemsKey).Result()
		pieces = int(n)
		if err == nil {
			n, err = d.client.ZCard(ctx, d.s).Result()
			items = int(n)
		}
		if err == nil {
			version, err = d.client.HGet(ctx, d.headKey, "v").Int64()
		}
	default:
		t.Fatalf("no reader for %T", drv)
	}
	if err != nil && err != goredis.Nil {
		t.Fatal(err)
	}
	return pieces, items, version
}

// TestPairedTurns runs the crash-safe turn on SQLite interleaved with the
// raw driver's same writes (pairedTurns) for a few turns and checks that
// it reports both times and their ratio, and that the driver wrote a tool
// turn for each of the chain's but a run's first.
func TestPairedTurns(t *testing.T) {
	fl := flag.Lookup("test.benchtime")
	old := fl.Value.String()
	if err := flag.Set("test.benchtime", "6x"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flag.Set("test.benchtime", old) }()
	var sqlite backend
	for _, be := range backends() {
		if be.name == "sqlite" {
			sqlite = be
		}
	}
	var turns int
	res := testing.Benchmark(func(b *testing.B) {
		turns = 0
		crashSafeTurnsWith(b, sqlite, 10, crashSafe, nil, func(tb testing.TB) rawDriver {
			return &countingDriver{rawDriver: openSameSQLite(tb), turns: &turns}
		})
	})
	own, same, ratio := PairedMetrics()
	if res.N != 6 || res.Extra[own] <= 0 || res.Extra[same] <= 0 {
		t.Fatalf("the paired turns reported %v over %d iterations, want both times per turn", res.Extra, res.N)
	}
	if got, want := res.Extra[ratio], res.Extra[own]/res.Extra[same]; math.Abs(got-want) > 1e-6*want {
		t.Errorf("the ratio reported is %v, want %v", got, want)
	}
	if turns != 5 {
		t.Errorf("the raw driver made %d tool turns beside the chain's 6, want 5 (one after each but the run's first)", turns)
	}
}

// A countingDriver counts the tool turns a raw driver makes.
type countingDriver struct {
	rawDriver
	turns *int
}

func (d *countingDriver) turn(ctx context.Context, v int64, j int, w *rawTurnWrites) error {
	*d.turns++
	return d.rawDriver.turn(ctx, v, j, w)
}
