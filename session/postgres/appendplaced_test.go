package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// batchLog records the SQL of every statement sent, alone or in a batch.
type batchLog struct {
	mu   sync.Mutex
	sqls []string
}

func (l *batchLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	l.sqls = append(l.sqls, d.SQL)
	l.mu.Unlock()
	return ctx
}
func (l *batchLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *batchLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (l *batchLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.mu.Lock()
	l.sqls = append(l.sqls, d.SQL)
	l.mu.Unlock()
}
func (l *batchLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns the statements recorded since the last take.
func (l *batchLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.sqls
	l.sqls = nil
	return out
}

// TestAppendPlaced checks Append's common case, items past position 1 of
// a run that has its place, sent with no read of their positions
// (the paired statement where each output's call is in the batch, the
// one that looks the call up where one is not; rows of a VALUES list up to
// maxValuesRows items, arrays beyond), and each case it cannot
// write going on to appendOne, which reads them: a run with no place, a
// retry of a committed append, another item at a position, a second
// output for a call, a session a Clear removed.
func TestAppendPlaced(t *testing.T) {
	ctx := t.Context()
	log := &batchLog{}
	s, schema, err := newTestStoreSchema(t, log)
	if err != nil {
		t.Fatal(err)
	}
	const sid = "placed"
	sent := func(t *testing.T, want ...string) {
		t.Helper()
		got := log.take()
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("the append did not send %.60q", w)
			}
		}
	}
	count := func(t *testing.T, want int) {
		t.Helper()
		items, err := s.List(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != want {
			t.Fatalf("the session holds %d items, want %d", len(items), want)
		}
	}

	if err := s.Append(ctx, sid, "run", sessiontest.Batch(0)); err != nil {
		t.Fatal(err)
	}
	// The statements of a placed append of n items: paired, or with the
	// lookup of a stored call.
	paired := func(n int) string { return s.q.placed.rows[1][n-1] }
	looked := func(n int) string { return s.q.placed.rows[0][n-1] }
	if got := log.take(); slices.ContainsFunc(got, isPlaced(&s.q.placed)) {
		t.Error("a run's first append, at position 1, tried a placed append")
	}

	t.Run("placed run", func(t *testing.T) {
		if err := s.Append(ctx, sid, "run", sessiontest.Batch(1)); err != nil {
			t.Fatal(err)
		}
		got := log.take()
		if !slices.Contains(got, paired(3)) || slices.Contains(got, s.q.appendOne) {
			t.Errorf("the append of a placed run, its call and output at consecutive positions, sent %d statements, want the paired placed append of 3 rows and not appendOne", len(got))
		}
		count(t, 6)
	})
	t.Run("retry", func(t *testing.T) {
		if err := s.Append(ctx, sid, "run", sessiontest.Batch(1)); err != nil {
			t.Fatalf("a retry of a committed append: %v", err)
		}
		sent(t, paired(3), s.q.appendOne)
		count(t, 6)
	})
	t.Run("another item", func(t *testing.T) {
		other := []state.Item{state.AssistantMessage("msg", "something else").WithSeq(4)}
		if err := s.Append(ctx, sid, "run", other); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("another item at a stored position: %v, want session.ErrConflict", err)
		}
		sent(t, paired(1), s.q.appendOne)
		count(t, 6)
	})
	t.Run("second output", func(t *testing.T) {
		again := []state.Item{state.ToolOutput("call", "lookup", `{"temp_c":19}`).WithSeq(7)}
		if err := s.Append(ctx, sid, "run", again); !errors.Is(err, session.ErrDuplicateOutput) {
			t.Fatalf("a second output for a call: %v, want session.ErrDuplicateOutput", err)
		}
		sent(t, looked(1), s.q.appendOne)
		count(t, 6)
	})
	t.Run("output of a stored call", func(t *testing.T) {
		call := state.ToolCall("fc", "held", "lookup", `{}`).WithSeq(7)
		output := func(seq int64) []state.Item {
			return []state.Item{state.ToolOutput("held", "lookup", `{}`).WithSeq(seq)}
		}
		if err := s.Append(ctx, sid, "run", []state.Item{call}); err != nil {
			t.Fatal(err)
		}
		log.take()
		if err := s.Append(ctx, sid, "run", output(8)); err != nil {
			t.Fatal(err)
		}
		if got := log.take(); !slices.Contains(got, looked(1)) || slices.Contains(got, paired(1)) {
			t.Error("the output of a call stored earlier was not sent as the placed append that looks the call up")
		}
		if err := s.Append(ctx, sid, "run", output(9)); !errors.Is(err, session.ErrDuplicateOutput) {
			t.Fatalf("a second output for the stored call: %v, want session.ErrDuplicateOutput", err)
		}
		count(t, 8)
	})
	t.Run("unplaced run", func(t *testing.T) {
		if err := s.Append(ctx, sid, "other", sessiontest.Batch(5)); err != nil {
			t.Fatal(err)
		}
		sent(t, paired(3), s.q.appendOne)
		count(t, 11)
	})
	t.Run("after Clear", func(t *testing.T) {
		if err := s.Clear(ctx, sid); err != nil {
			t.Fatal(err)
		}
		log.take()
		if err := s.Append(ctx, sid, "run", sessiontest.Batch(2)); err != nil {
			t.Fatal(err)
		}
		sent(t, paired(3), s.q.appendOne)
		count(t, 3)
	})
	t.Run("sizes", func(t *testing.T) {
		// Batches of 1 to maxValuesRows+2 items, each output answering
		// the call before it: rows of a VALUES list up to maxValuesRows,
		// arrays beyond; each item stored with its call ID, the call its
		// output answers and the batch's stamp.
		const run = "sizes"
		if err := s.Append(ctx, sid, run, []state.Item{state.UserMessage("go").WithSeq(1)}); err != nil {
			t.Fatal(err)
		}
		next := int64(2)
		for n := 1; n <= maxValuesRows+2; n++ {
			var batch []state.Item
			for len(batch) < n {
				id := "size-" + strconv.Itoa(n) + "-" + strconv.Itoa(len(batch))
				batch = append(batch, state.ToolCall("fc", id, "lookup", `{}`).WithSeq(next))
				next++
				if len(batch) < n {
					batch = append(batch, state.ToolOutput(id, "lookup", `{}`).WithSeq(next))
					next++
				}
			}
			log.take()
			if err := s.Append(ctx, sid, run, batch); err != nil {
				t.Fatalf("%d items: %v", n, err)
			}
			want := s.q.placed.arrays[1]
			if n <= maxValuesRows {
				want = paired(n)
			}
			if got := log.take(); !slices.Contains(got, want) || slices.Contains(got, s.q.appendOne) {
				t.Errorf("%d items: the append did not send the paired placed append %.80q alone", n, want)
			}
			sch := pgx.Identifier{schema}.Sanitize()
			rows, err := s.pool.Query(ctx, `SELECT i.seq, i.kind, i.call_id, i.answers,
					i.stamp = (SELECT stamp FROM `+sch+`.session_heads WHERE session_id = $1)
				FROM `+sch+`.session_items i JOIN `+sch+`.session_runs r USING (session_id, place)
				WHERE i.session_id = $1 AND r.run_id = $2 AND i.seq >= $3 ORDER BY i.seq`, sid, run, batch[0].Seq())
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for rows.Next() {
				var (
					seq     int64
					kind    string
					callID  []byte
					answers *int64
					stamped bool
				)
				if err := rows.Scan(&seq, &kind, &callID, &answers, &stamped); err != nil {
					t.Fatal(err)
				}
				it := batch[k]
				wantAnswers := int64(0)
				if it.Kind() == state.KindToolOutput {
					wantAnswers = it.Seq() - 1
				}
				if seq != it.Seq() || kind != it.Kind().String() || string(callID) != it.CallID() ||
					(answers == nil) != (wantAnswers == 0) || answers != nil && *answers != wantAnswers || !stamped {
					t.Errorf("%d items: row %d is (%d, %s, %q, %v, stamped %v), want (%d, %s, %q, answers %d, the last stamp)",
						n, k, seq, kind, callID, answers, stamped, it.Seq(), it.Kind(), it.CallID(), wantAnswers)
				}
				k++
			}
			if err := rows.Err(); err != nil || k != n {
				t.Errorf("%d items: %d rows stored (%v)", n, k, err)
			}
		}
	})
}

// isPlaced returns whether a statement is one of p's.
func isPlaced(p *placedStatements) func(string) bool {
	return func(q string) bool {
		return slices.Contains(p.arrays[:], q) || slices.Contains(p.rows[0][:], q) || slices.Contains(p.rows[1][:], q)
	}
}

// TestLargeNumbers saves a run past version, turn and position 256 (where
// the store's arguments go as pointers, pgInt64 and int64s, rather than
// boxed numbers) and appends items there, and reads back what it wrote.
func TestLargeNumbers(t *testing.T) {
	ctx := t.Context()
	s, err := newTestStore(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := state.NewRun("large", "assistant")
	runcore.SetMaxTurns(r, 1<<30)
	runcore.SetSessionID(r, "large-session")
	runcore.AddInput(r, state.UserMessage("go"))
	for turn := 1; turn <= 300; turn++ {
		ckpttest.Turn(t, r, turn)
		if err := s.Save(ctx, r); err != nil {
			t.Fatalf("save %d: %v", turn, err)
		}
	}
	got, err := s.Load(ctx, "large")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != r.Version() || got.Version() < 300 || got.Turn() != 300 || got.Len() != r.Len() {
		t.Fatalf("loaded version %d, turn %d, %d items; saved version %d, turn 300, %d items", got.Version(), got.Turn(), got.Len(), r.Version(), r.Len())
	}
	if err := s.Append(ctx, "large-session", "large", sessiontest.Batch(0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "large-session", "large", sessiontest.Batch(200)); err != nil { // positions 601 to 603
		t.Fatal(err)
	}
	items, err := s.List(ctx, "large-session", 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, it := range items {
		seqs = append(seqs, it.Seq())
	}
	if want := []int64{1, 2, 3, 601, 602, 603}; !slices.Equal(seqs, want) {
		t.Fatalf("the session holds positions %v, want %v", seqs, want)
	}
}

// newTestStore returns a Store in a schema of its own, dropped at the
// end, on a pool whose connections trace with tracer (nil: none).
func newTestStore(t *testing.T, tracer pgx.QueryTracer) (*Store, error) {
	t.Helper()
	s, _, err := newTestStoreSchema(t, tracer)
	return s, err
}

// newTestStoreSchema is newTestStore that also returns the store's schema.
func newTestStoreSchema(t *testing.T, tracer pgx.QueryTracer) (*Store, string, error) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "turnkit_internal_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
		pool.Close()
	})
	s, err := New(t.Context(), pool, WithSchema(schema))
	return s, schema, err
}

// TestSavePieces checks that a save that builds on the stored version
// sends its delta's pieces as rows of a VALUES list up to maxValuesRows
// pieces, and as arrays beyond (in SaveAppend's commit, which sends its
// items the same way, the statement for both counts),
// and that the run loads back as it was saved.
func TestSavePieces(t *testing.T) {
	ctx := t.Context()
	log := &batchLog{}
	s, err := newTestStore(t, log)
	if err != nil {
		t.Fatal(err)
	}
	for _, withAppend := range []bool{false, true} {
		r := state.NewRun("pieces-"+strconv.FormatBool(withAppend), "agent")
		runcore.SetSessionID(r, "pieces-session-"+strconv.FormatBool(withAppend))
		ckpttest.Turn(t, r, 1)
		if err := s.SaveAppend(ctx, r, r.SessionID(), r.Items().Slice()); err != nil {
			t.Fatal(err)
		}
		pieces := &s.ck.casPiecesOn
		for k := 1; k <= maxValuesRows+2; k++ {
			first := runcore.Reserve(r, k)
			batch := make([]state.Item, k)
			for i := range batch {
				batch[i] = state.AssistantMessage("msg", "piece "+strconv.Itoa(k)+"."+strconv.Itoa(i)).WithSeq(first + int64(i))
			}
			if err := runcore.RecordAll(r, batch...); err != nil {
				t.Fatal(err)
			}
			d, err := r.Delta()
			if err != nil {
				t.Fatal(err)
			}
			n := len(d.Items)
			log.take()
			if withAppend {
				err = s.SaveAppend(ctx, r, r.SessionID(), batch)
			} else {
				err = s.Save(ctx, r)
			}
			if err != nil {
				t.Fatalf("%d items: %v", k, err)
			}
			want := pieces.arrays
			if n <= maxValuesRows {
				want = pieces.rows[n-1]
			}
			if withAppend {
				// The commit: its pieces (n, or arrays) and its items
				// (k, or arrays), paired (no outputs).
				pk, ik := min(n, maxValuesRows+1), min(k, maxValuesRows+1)-1
				want = s.ck.commitOn.s[1][pk][ik]
			}
			if got := log.take(); !slices.Contains(got, want) {
				t.Errorf("append %v, %d items: a save of %d pieces did not send %.80q", withAppend, k, n, want)
			}
			loaded, err := s.Load(ctx, r.ID())
			if err != nil {
				t.Fatal(err)
			}
			if diff := statetest.Diff(t, loaded, r); diff != "" {
				t.Fatalf("append %v, %d items: the run loads back otherwise (-want +got):\n%s", withAppend, k, diff)
			}
		}
	}
}
