package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// benchRun numbers the benchmark invocations: each appends to a new session.
var benchRun atomic.Int64

func benchSession() string { return "bench-" + strconv.FormatInt(benchRun.Add(1), 10) }

// BenchmarkAppend compares a committed append of three items through the
// Store with the raw driver inserting the same three rows in one immediate
// transaction on the same kind of file, in the same run ("raw", a table
// with its primary key alone, turnbench's baseline), and with the raw
// driver writing what the store's commit writes ("raw-same-writes": the
// store's table and indexes, each row with its call ID, the call its
// output answers and its write stamp, computed in Go rather than read),
// which parts the store's cost into its schema's and its own.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	b.Run("turnkit", func(b *testing.B) {
		s := open(b, filepath.Join(b.TempDir(), "bench.db"))
		b.ReportAllocs()
		sid := benchSession()
		var i int64
		for b.Loop() {
			if err := s.Append(ctx, sid, "run", sessiontest.Batch(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("raw", func(b *testing.B) {
		db := rawAppendDB(b, filepath.Join(b.TempDir(), "raw.db"))
		if _, err := db.Exec(`CREATE TABLE items (session_id TEXT, place INTEGER, seq INTEGER, kind TEXT, name TEXT, raw BLOB,
			PRIMARY KEY (session_id, place, seq)) WITHOUT ROWID`); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		sid := benchSession()
		var i int64
		for b.Loop() {
			if err := rawAppend(ctx, db, sid, sessiontest.Batch(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("raw-same-writes", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "raw.db")
		open(b, path) // the store's schema, by its own migrations
		db := rawAppendDB(b, path)
		b.ReportAllocs()
		sid := benchSession()
		var i int64
		for b.Loop() {
			if err := rawAppendSameWrites(ctx, db, sid, i+1, sessiontest.Batch(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		// Each batch's output answers its call, as the store's would.
		var answered int64
		if err := db.QueryRow(`SELECT count(*) FROM session_items WHERE session_id = ? AND answers = seq - 1`, sid).Scan(&answered); err != nil || answered != i {
			b.Fatalf("%d outputs answer their calls after %d appends (%v)", answered, i, err)
		}
	})
}

// BenchmarkAppendPaired times the Store's commit and raw-same-writes'
// (see BenchmarkAppend), each on a file of its own, one after the other in each
// iteration (sessiontest.AppendPaired), and reports their ratio.
func BenchmarkAppendPaired(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
	path := filepath.Join(b.TempDir(), "raw.db")
	open(b, path) // the store's schema, by its own migrations
	db := rawAppendDB(b, path)
	rawSID := benchSession()
	sessiontest.AppendPaired(b, s, benchSession(), func(i int64) error {
		return rawAppendSameWrites(ctx, db, rawSID, i+1, sessiontest.Batch(i))
	})
}

// rawAppendDB opens the file at path for the raw driver's appends, as the
// store opens its own: immediate transactions, a write-ahead log,
// synchronous NORMAL.
func rawAppendDB(b *testing.B, path string) *sql.DB {
	db, err := sql.Open("sqlite", path+"?_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// rawAppendSameWrites inserts items into the store's session_items as
// the store's rows, with stamp as their write stamp: a call and an output
// get their call ID, an output the position of the call before it in
// items (rowcodec.Calls, as the store finds it before it looks further).
func rawAppendSameWrites(ctx context.Context, db *sql.DB, sessionID string, stamp int64, items []state.Item) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	callIDs, batchCalls := rowcodec.Calls(items)
	for i, it := range items {
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sessionID, 1, it.Seq(), it.Kind().String(), it.Name(), it.Raw(), callIDs[i], batchCalls[i], stamp); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func rawAppend(ctx context.Context, db *sql.DB, sessionID string, items []state.Item) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, it := range items {
		if _, err := tx.ExecContext(ctx, `INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)`,
			sessionID, 1, it.Seq(), it.Kind().String(), it.Name(), it.Raw()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkCheckpointSave saves a run once per turn (a tool call and its
// output) after history items of session history and as many items of its
// own: the cost of a save, and the bytes it writes to the file (the pages
// it appends to the write-ahead log, the median of nine saves), must not
// grow with the history.
func BenchmarkCheckpointSave(b *testing.B) {
	ctx := context.Background()
	for _, history := range []int{10, 1000, 10000} {
		b.Run("history="+strconv.Itoa(history), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.db")
			s := open(b, path)
			r := ckpttest.LongRun(b, "bench-run", history)
			if err := s.Save(ctx, r); err != nil {
				b.Fatal(err)
			}
			// What a save of the whole checkpoint (the earlier format) wrote
			// at this history.
			whole, err := state.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			// The full first save's pages leave the log before the clock
			// starts: copying them into the file is a cost of that save.
			db := rawDB(b, path)
			if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				b.Fatal(err)
			}
			turn := history
			b.ReportAllocs()
			for b.Loop() {
				turn++
				ckpttest.Turn(b, r, turn)
				if err := s.Save(ctx, r); err != nil {
					b.Fatalf("save of turn %d: %v", turn, err)
				}
			}
			sizes := make([]int64, 9)
			for i := range sizes {
				turn++
				ckpttest.Turn(b, r, turn)
				var err error
				_, sizes[i] = walWritten(b, db, path, r.ID(), func() { err = s.Save(ctx, r) })
				if err != nil {
					b.Fatalf("measured save of turn %d: %v", turn, err)
				}
			}
			slices.Sort(sizes)
			b.ReportMetric(float64(sizes[len(sizes)/2]), "B-written/save")
			b.ReportMetric(float64(len(whole)), "B-whole/save")
		})
	}
}

// BenchmarkRead times the reads a run makes of its session before its
// first turn, once per user message in a chat product: the history before
// the run (ListBefore, its last 10 items) and the changes a cached
// session catches up with (ReadChanges since the last append's stamp, one
// below the session's: the last run's 10 items; and the session's tail of 10 items), in a session
// of 1 000 items.
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "read.db"))
	sid, last := conversation(b, s)
	tail, err := s.ReadChanges(ctx, sid, session.ChangeQuery{Limit: 10, RunID: last})
	if err != nil || len(tail.Items) != 10 {
		b.Fatalf("the session's tail: %d items, %v", len(tail.Items), err)
	}
	for _, bc := range []struct {
		name string
		read func() (int, error)
	}{
		{"list-before", func() (int, error) {
			h, err := s.ListBefore(ctx, sid, last, session.HistoryQuery{Limit: 10})
			return len(h.Items), err
		}},
		{"changes-since", func() (int, error) {
			ch, err := s.ReadChanges(ctx, sid, session.ChangeQuery{Since: tail.Stamp - 1, RunID: last})
			return len(ch.Items), err
		}},
		{"changes-tail", func() (int, error) {
			ch, err := s.ReadChanges(ctx, sid, session.ChangeQuery{Limit: 10, RunID: last})
			return len(ch.Items), err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n, err := bc.read(); err != nil || n != 10 {
					b.Fatalf("read %d items, %v; want 10", n, err)
				}
			}
		})
	}
}

// conversation appends 100 runs of 10 items (conversationItems) to a new
// session of s and returns the session and its last run.
func conversation(b *testing.B, s *sqlite.Store) (sessionID, lastRun string) {
	sid := benchSession()
	const runs = 100
	for r := range runs {
		if err := s.Append(context.Background(), sid, "run-"+strconv.Itoa(r), conversationItems(10)); err != nil {
			b.Fatal(err)
		}
	}
	return sid, "run-" + strconv.Itoa(runs-1)
}

// conversationItems returns a run of n items, n even: a user message,
// then tool calls with their outputs, then a reply.
func conversationItems(n int) []state.Item {
	items := []state.Item{state.UserMessage("question").WithSeq(1)}
	for len(items) < n-1 {
		id := "call_" + strconv.Itoa(len(items))
		items = append(items,
			state.ToolCall("fc_"+id, id, "lookup", `{"q":"x"}`).WithSeq(int64(len(items)+1)),
			state.ToolOutput(id, "lookup", "ok").WithSeq(int64(len(items)+2)))
	}
	return append(items, state.AssistantMessage("msg", "answer").WithSeq(int64(len(items)+1)))
}

// BenchmarkPop times a Pop of the last item of a session of 1 000 items
// (100 runs of 10), the removal of a message a user takes back; every 10
// pops, untimed, the last run's items go back.
func BenchmarkPop(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "pop.db"))
	sid, last := conversation(b, s)
	popped := 0
	b.ReportAllocs()
	for b.Loop() {
		if popped == 10 {
			b.StopTimer()
			// The run keeps its place: its items go back where they were.
			if err := s.Append(ctx, sid, last, conversationItems(10)); err != nil {
				b.Fatal(err)
			}
			popped = 0
			b.StartTimer()
		}
		if _, ok, err := s.Pop(ctx, sid); err != nil || !ok {
			b.Fatalf("pop: %v, %v", ok, err)
		}
		popped++
	}
}
