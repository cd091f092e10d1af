package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// walPages returns the pages the write-ahead log of the file at path
// gained per call of commit, on average over n calls, each measured from
// an empty log (db checkpoints it first).
func walPages(t *testing.T, db *sql.DB, path string, n int, commit func(i int64)) float64 {
	t.Helper()
	var pageSize int64
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	var frames int64
	for i := range int64(n) {
		var busy, logged, done int
		if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done); err != nil || busy != 0 {
			t.Fatalf("wal_checkpoint(TRUNCATE) = busy %d, %v", busy, err)
		}
		commit(i)
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		// A 32-byte header, then a 24-byte header before each page.
		frames += (fi.Size() - 32) / (pageSize + 24)
	}
	return float64(frames) / float64(n)
}

// uniqueBatch is sessiontest.Batch(i) with a call ID of its own, as a
// model gives each call: Batch's calls share one.
func uniqueBatch(i int64) []state.Item {
	id := "call_" + strconv.FormatInt(i*7919%100003, 36) // no order to the IDs
	b := sessiontest.Batch(i)
	return []state.Item{
		state.ToolCall("fc", id, "lookup", `{"q":"weather in Paris"}`).WithSeq(b[0].Seq()),
		state.ToolOutput(id, "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(b[1].Seq()),
		b[2],
	}
}

// TestAppendWALPages measures the pages an append of three items (a
// call, its output, a message) writes to the log, in a session of a
// thousand such appends already, beside the raw driver's insert of the
// same rows into a table with only a primary key (BenchmarkAppend's raw
// row), and fails if the store's grow past what its schema writes now.
// Both batches: sessiontest.Batch, which BenchmarkAppend appends (one
// call ID for every call), and uniqueBatch (a call ID each).
func TestAppendWALPages(t *testing.T) {
	for _, c := range []struct {
		name  string
		batch func(int64) []state.Item
		max   float64
	}{
		{"one call ID", sessiontest.Batch, 4.2},
		{"a call ID each", uniqueBatch, 4.2},
	} {
		t.Run(c.name, func(t *testing.T) {
			store, raw := appendWALPages(t, c.batch)
			t.Logf("WAL pages per append of three items: store %.2f, raw driver %.2f", store, raw)
			if store > c.max {
				t.Errorf("WAL pages per append = %.2f, want at most %.2f", store, c.max)
			}
		})
	}
}

// appendWALPages returns the pages per append of batch that the store
// and the raw driver write to the log.
func appendWALPages(t *testing.T, batch func(int64) []state.Item) (store, raw float64) {
	ctx := context.Background()
	const warm, n = 1000, 50
	path := filepath.Join(t.TempDir(), "wal.db")
	s := open(t, path)
	for i := range int64(warm) {
		if err := s.Append(ctx, "wal", "run", batch(i)); err != nil {
			t.Fatal(err)
		}
	}
	store = walPages(t, rawDB(t, path), path, n, func(i int64) {
		if err := s.Append(ctx, "wal", "run", batch(warm+i)); err != nil {
			t.Fatal(err)
		}
	})

	rawPath := filepath.Join(t.TempDir(), "raw.db")
	db, err := sql.Open("sqlite", rawPath+"?_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE items (session_id TEXT, place INTEGER, seq INTEGER, kind TEXT, name TEXT, raw BLOB,
		PRIMARY KEY (session_id, place, seq)) WITHOUT ROWID`); err != nil {
		t.Fatal(err)
	}
	for i := range int64(warm) {
		if err := rawAppend(ctx, db, "wal", batch(i)); err != nil {
			t.Fatal(err)
		}
	}
	raw = walPages(t, db, rawPath, n, func(i int64) {
		if err := rawAppend(ctx, db, "wal", batch(warm+i)); err != nil {
			t.Fatal(err)
		}
	})
	return store, raw
}

// TestSealedAppendWALPages measures what encryption at rest adds to an
// append's writes: the pages it writes to the log and the bytes its items
// take, with session/encrypt's keyring as the store's codec and item
// codec, beside the same appends without it. A sealed item is kept as
// bytes (session/encrypt's binary form: a format byte, the run's ID, the
// data key's ID, the nonce, the item's JSON encrypted and the tag: 42
// bytes over the plain JSON with this run's ID; the JSON form, its
// routing members in the clear and the whole item sealed in base64, took
// about 2.6 times a plain item's bytes, 330 against 129, and 5.46 pages an
// append against 5.02); the test fails if a sealed item takes more than
// 48 bytes over a plain one, or an append more than half a page over the
// plain one's.
func TestSealedAppendWALPages(t *testing.T) {
	ctx := context.Background()
	const warm, n = 1000, 50
	var pages, bytes [2]float64
	for i, sealed := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "wal.db")
		kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("wal"))
		var opts []sqlite.Option
		if sealed {
			opts = append(opts, sqlite.WithCodec(kr.Codec()), sqlite.WithItemCodec(kr))
		}
		db, err := sqlite.Open(path, opts...)
		if err != nil {
			t.Fatal(err)
		}
		var s session.Store = db
		if sealed {
			s = encrypt.Wrap(db, kr)
		}
		t.Cleanup(func() { _ = s.Close() })
		for j := range int64(warm) {
			if err := s.Append(ctx, "wal", "run", sessiontest.Batch(j)); err != nil {
				t.Fatal(err)
			}
		}
		pages[i] = walPages(t, rawDB(t, path), path, n, func(j int64) {
			if err := s.Append(ctx, "wal", "run", sessiontest.Batch(warm+j)); err != nil {
				t.Fatal(err)
			}
		})
		var sum, count float64
		if err := rawDB(t, path).QueryRow(`SELECT sum(length(raw)), count(*) FROM session_items`).Scan(&sum, &count); err != nil {
			t.Fatal(err)
		}
		bytes[i] = sum / count
	}
	t.Logf("WAL pages per append of three items: plain %.2f, sealed %.2f; bytes per item: plain %.0f, sealed %.0f", pages[0], pages[1], bytes[0], bytes[1])
	if pages[1] > pages[0]+0.5 {
		t.Errorf("a sealed append writes %.2f pages to the log, the plain one %.2f: want at most half a page more", pages[1], pages[0])
	}
	if bytes[1] > bytes[0]+48 {
		t.Errorf("a sealed item takes %.0f bytes, a plain one %.0f: want at most 48 more", bytes[1], bytes[0])
	}
}
