package scenario

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// sameTurns is how many tool turns TestSameWritesSQLite compares.
const sameTurns = 4

// TestSameWritesSQLite checks that the raw-same-writes driver writes what
// the SQLite store writes for the same crash-safe tool turns, neither
// less nor other: it runs sameTurns tool turns of a run through the
// store's crash-safe chain, and the same turns' writes (recorded on the
// memory stores, as recordTurnWrites records them) through the driver,
// and compares, table by table, every row each side's turns added,
// changed or removed, all of their columns: heads, summaries, versions,
// pieces, places, positions, write stamps, call IDs, answered calls,
// behind marks, listing rows. The turns' writes are replayed unshifted,
// at their own versions, so that the two files hold the same run.
func TestSameWritesSQLite(t *testing.T) {
	ctx := context.Background()
	first, turns := recordAllTurnWrites(t, 10, sameTurns)
	want := storeTurnChanges(t, 10, sameTurns)

	drv := openSameSQLite(t).(*sameSQLite)
	defer drv.close()
	if err := drv.seed(ctx, makeHistory(10)); err != nil {
		t.Fatal(err)
	}
	if err := drv.reset(ctx, first); err != nil {
		t.Fatal(err)
	}
	before := snapshotTables(t, drv.db)
	for k := range turns {
		if err := drv.turn(ctx, 2*int64(k+1), 0, &turns[k]); err != nil {
			t.Fatalf("tool turn %d: %v", k+1, err)
		}
	}
	got := tableChanges(before, snapshotTables(t, drv.db))

	for _, table := range unionKeys(want, got) {
		w, g := want[table], got[table]
		if len(w.added) != len(g.added) || len(w.removed) != len(g.removed) {
			t.Errorf("%s: the driver's turns add %d rows and remove %d, the store's %d and %d",
				table, len(g.added), len(g.removed), len(w.added), len(w.removed))
		}
		for _, d := range []struct {
			what      string
			want, got []string
		}{{"added", w.added, g.added}, {"removed", w.removed, g.removed}} {
			for _, r := range d.want {
				if !slices.Contains(d.got, r) {
					t.Errorf("%s: the store's turns %s %s, the driver's did not", table, d.what, r)
				}
			}
			for _, r := range d.got {
				if !slices.Contains(d.want, r) {
					t.Errorf("%s: the driver's turns %s %s, the store's did not", table, d.what, r)
				}
			}
		}
	}
	if n := len(want["session_items"].added); n != 2*sameTurns {
		t.Errorf("the store's turns appended %d items, want %d: the comparison is not of tool turns", n, 2*sameTurns)
	}
}

// TestSameWritesSQLitePlays runs the driver as the benchmark does, two
// runs of a few tool turns replayed from recordTurnWrites: every write
// goes in, and each commit's items take the session's next write stamp,
// after the first run's, and answer their calls.
func TestSameWritesSQLitePlays(t *testing.T) {
	ctx := context.Background()
	ws := recordTurnWrites(t, 10)
	drv := openSameSQLite(t).(*sameSQLite)
	defer drv.close()
	if err := drv.seed(ctx, makeHistory(10)); err != nil {
		t.Fatal(err)
	}
	const turns = 5
	for run := range 2 {
		if err := drv.reset(ctx, ws[0].save.head); err != nil {
			t.Fatal(err)
		}
		if err := drv.settle(ctx); err != nil {
			t.Fatal(err)
		}
		for j := range turns {
			if err := ws.play(ctx, drv, j); err != nil {
				t.Fatalf("run %d, tool turn %d: %v", run, j, err)
			}
		}
	}
	var items, stamps, answered, first, last int64
	if err := drv.db.QueryRow(`SELECT count(*), count(DISTINCT stamp), count(*) FILTER (WHERE answers = seq - 1), min(stamp), max(stamp)
		FROM session_items WHERE session_id = ? AND place = ?`, rawSessionID, rawRunPlace).Scan(&items, &stamps, &answered, &first, &last); err != nil {
		t.Fatal(err)
	}
	// The second run's input and turns, after the first run's stamps.
	if items != 1+2*turns || stamps != 1+turns || answered != turns || first != 1+(1+turns)+1 || last != first+turns {
		t.Errorf("the second run holds %d items of %d stamps from %d to %d, %d outputs answering their calls; want %d items of %d stamps from %d, %d answering",
			items, stamps, first, last, answered, 1+2*turns, 1+turns, 1+(1+turns)+1, turns)
	}
}

// recordAllTurnWrites runs n crash-safe tool turns on the memory stores
// from h items of history, as recordTurnWrites does, and returns the
// head of the run's first save and the writes of every tool turn.
func recordAllTurnWrites(tb testing.TB, h, n int) ([]byte, []rawTurnWrites) {
	ctx := context.Background()
	rec := &recordingSessions{Store: memory.New()}
	defer rec.Store.Close()
	st := &recordingStore{Store: memstore.New(), log: &rec.log}
	if err := rec.Store.Append(ctx, rawSessionID, "history", makeHistory(h)); err != nil {
		tb.Fatal(err)
	}
	runSameChain(tb, st, rec, n)
	var out []rawTurnWrites
	appends := 0
	for i, e := range rec.log {
		if e.items == nil {
			continue
		}
		if appends++; appends == 1 || len(out) == n {
			continue // the input's
		}
		if i < 2 || rec.log[i-1].items != nil || rec.log[i-2].items != nil {
			tb.Fatalf("the writes of tool turn %d are not save, save, append", len(out)+1)
		}
		out = append(out, rawTurnWrites{save: rec.log[i-2].save, commit: rec.log[i-1].save, items: e.items})
	}
	if len(rec.log) == 0 || rec.log[0].items != nil || len(out) != n {
		tb.Fatalf("the recorded run made %d tool turns, want %d", len(out), n)
	}
	return rec.log[0].save.head, out
}

// runSameChain runs a crash-safe run of n tool turns, then a reply, with
// its checkpoints in st and its session in sess, in the raw rows' run and
// session, as recordTurnWrites runs it.
func runSameChain(tb testing.TB, st state.Store, sess session.Store, n int) {
	ctx := context.Background()
	cp := checkpoint.New(st, checkpoint.WithSession(sess))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	agent := &pipeline.Agent{Name: "bench", Model: turnsModel(n), Tools: []pipeline.Tool{trivialTool()}}
	run := state.NewRun(rawRunID, "bench")
	runcore.SetSessionID(run, rawSessionID)
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithState(run)); err != nil {
		tb.Fatal(err)
	}
}

// A snapshotStore is the SQLite store, as the checkpointer's state and
// session store, that reads every table of its file after its first
// SaveAppend (the run's first save, with its input) and after its
// (n+1)th (tool turn n's commit).
type snapshotStore struct {
	*sqlite.Store
	tb        testing.TB
	db        *sql.DB
	n, calls  int
	before, a map[string][]string
}

func (s *snapshotStore) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	err := s.Store.SaveAppend(ctx, run, sessionID, items)
	switch s.calls++; s.calls {
	case 1:
		s.before = snapshotTables(s.tb, s.db)
	case s.n + 1:
		s.a = snapshotTables(s.tb, s.db)
	}
	return err
}

// storeTurnChanges runs n crash-safe tool turns through the SQLite store
// from h items of history and returns what those turns changed in each
// table: from after the run's first save to after tool turn n's commit.
func storeTurnChanges(tb testing.TB, h, n int) map[string]rowChanges {
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "store.db")
	st, err := sqlite.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := st.Append(ctx, rawSessionID, "history", makeHistory(h)); err != nil {
		tb.Fatal(err)
	}
	s := &snapshotStore{Store: st, tb: tb, db: db, n: n}
	runSameChain(tb, s, s, n)
	if s.before == nil || s.a == nil {
		tb.Fatalf("the store's run made %d commits, want more than %d: the chain does not commit with SaveAppend", s.calls, n)
	}
	return tableChanges(s.before, s.a)
}

// snapshotTables returns every row of every table of db but the
// migrations' record, each row as the text of all its columns.
func snapshotTables(tb testing.TB, db *sql.DB) map[string][]string {
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'schema_version' ORDER BY name`)
	if err != nil {
		tb.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			tb.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	out := make(map[string][]string)
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM ` + table)
		if err != nil {
			tb.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				tb.Fatal(err)
			}
			var b strings.Builder
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%s=%q ", cols[i], fmt.Sprint(v))
			}
			out[table] = append(out[table], b.String())
		}
		rows.Close()
		if out[table] == nil {
			out[table] = []string{} // a table with no row is listed
		}
	}
	return out
}

// rowChanges are the rows a table gained (added or changed, as they are
// after) and lost (removed or changed, as they were before).
type rowChanges struct{ added, removed []string }

func tableChanges(before, after map[string][]string) map[string]rowChanges {
	out := make(map[string]rowChanges)
	for _, table := range unionKeys(before, after) {
		var c rowChanges
		for _, r := range after[table] {
			if !slices.Contains(before[table], r) {
				c.added = append(c.added, r)
			}
		}
		for _, r := range before[table] {
			if !slices.Contains(after[table], r) {
				c.removed = append(c.removed, r)
			}
		}
		out[table] = c
	}
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
