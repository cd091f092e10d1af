package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
)

// benchRun numbers the benchmark invocations: each appends to a new session.
var benchRun atomic.Int64

func benchSession() string { return "bench-" + strconv.FormatInt(benchRun.Add(1), 10) }

// BenchmarkAppend compares a committed append of three items through the
// Store with the raw driver inserting the same three rows in one immediate
// transaction on the same kind of file, in the same run.
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
		db, err := sql.Open("sqlite", filepath.Join(b.TempDir(), "raw.db")+"?_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
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
