package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
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
)

// batchLog records the SQL of every statement sent in a batch.
type batchLog struct {
	mu   sync.Mutex
	sqls []string
}

func (l *batchLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
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
// (appendPaired where each output's call is in the batch, appendPlaced,
// which looks the call up, where one is not), and each case it cannot
// write going on to appendOne, which reads them: a run with no place, a
// retry of a committed append, another item at a position, a second
// output for a call, a session a Clear removed.
func TestAppendPlaced(t *testing.T) {
	ctx := t.Context()
	log := &batchLog{}
	s, err := newTestStore(t, log)
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
	if got := log.take(); slices.Contains(got, s.q.appendPlaced) || slices.Contains(got, s.q.appendPaired) {
		t.Error("a run's first append, at position 1, tried a placed append (appendPlaced or appendPaired)")
	}

	t.Run("placed run", func(t *testing.T) {
		if err := s.Append(ctx, sid, "run", sessiontest.Batch(1)); err != nil {
			t.Fatal(err)
		}
		got := log.take()
		if !slices.Contains(got, s.q.appendPaired) || slices.Contains(got, s.q.appendOne) {
			t.Errorf("the append of a placed run, its call and output at consecutive positions, sent %d statements, want appendPaired and not appendOne", len(got))
		}
		count(t, 6)
	})
	t.Run("retry", func(t *testing.T) {
		if err := s.Append(ctx, sid, "run", sessiontest.Batch(1)); err != nil {
			t.Fatalf("a retry of a committed append: %v", err)
		}
		sent(t, s.q.appendPaired, s.q.appendOne)
		count(t, 6)
	})
	t.Run("another item", func(t *testing.T) {
		other := []state.Item{state.AssistantMessage("msg", "something else").WithSeq(4)}
		if err := s.Append(ctx, sid, "run", other); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("another item at a stored position: %v, want session.ErrConflict", err)
		}
		sent(t, s.q.appendPaired, s.q.appendOne)
		count(t, 6)
	})
	t.Run("second output", func(t *testing.T) {
		again := []state.Item{state.ToolOutput("call", "lookup", `{"temp_c":19}`).WithSeq(7)}
		if err := s.Append(ctx, sid, "run", again); !errors.Is(err, session.ErrDuplicateOutput) {
			t.Fatalf("a second output for a call: %v, want session.ErrDuplicateOutput", err)
		}
		sent(t, s.q.appendPlaced, s.q.appendOne)
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
		if got := log.take(); !slices.Contains(got, s.q.appendPlaced) || slices.Contains(got, s.q.appendPaired) {
			t.Error("the output of a call stored earlier was not sent as appendPlaced, which looks the call up")
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
		sent(t, s.q.appendPaired, s.q.appendOne)
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
		sent(t, s.q.appendPaired, s.q.appendOne)
		count(t, 3)
	})
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
	return New(t.Context(), pool, WithSchema(schema))
}
