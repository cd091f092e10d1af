package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// undoListingTrigger are the statements that set a file back from
// migration 0013 to 0012: no session and status in the head's row, and
// no triggers; its last statement drops the version.
var undoListingTrigger = []string{
	`DROP TRIGGER run_checkpoints_filed`,
	`DROP TRIGGER run_checkpoints_refiled`,
	`ALTER TABLE run_checkpoints DROP COLUMN session_id`,
	`ALTER TABLE run_checkpoints DROP COLUMN status`,
	`DELETE FROM schema_version WHERE version >= 13`,
}

// undoPieceOrder are the statements that set a file back from migration
// 0013 to 0011: undoListingTrigger, then the checkpoint pieces keyed by
// run and position.
var undoPieceOrder = append(undoListingTrigger[:len(undoListingTrigger):len(undoListingTrigger)],
	`CREATE TABLE run_checkpoint_by_seq (run_id TEXT NOT NULL, seq INTEGER NOT NULL, version INTEGER NOT NULL,
		data BLOB NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID`,
	`INSERT INTO run_checkpoint_by_seq (run_id, seq, version, data) SELECT run_id, seq, version, data FROM run_checkpoint_items`,
	`DROP TABLE run_checkpoint_items`,
	`ALTER TABLE run_checkpoint_by_seq RENAME TO run_checkpoint_items`,
	`DELETE FROM schema_version WHERE version >= 12`,
)

// undoRunSummary are the statements that set a file back from migration
// 0013 to 0010: undoPieceOrder, then the whole summary of each run in
// run_index.
var undoRunSummary = append(undoPieceOrder[:len(undoPieceOrder):len(undoPieceOrder)],
	`ALTER TABLE run_index ADD COLUMN agent TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE run_index ADD COLUMN turn INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE run_index ADD COLUMN pending INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE run_index ADD COLUMN version INTEGER NOT NULL DEFAULT 0`,
	`UPDATE run_index AS i SET agent = c.agent, turn = c.turn, pending = c.pending, version = c.version
		FROM run_checkpoints AS c WHERE c.run_id = i.run_id`,
	`ALTER TABLE run_checkpoints DROP COLUMN agent`,
	`ALTER TABLE run_checkpoints DROP COLUMN turn`,
	`ALTER TABLE run_checkpoints DROP COLUMN pending`,
	`DELETE FROM schema_version WHERE version >= 11`,
)

// undoStampsBehind are the statements that set a file back from
// migration 0013 to 0009: undoRunSummary, then every item in the index of
// stamps.
var undoStampsBehind = append(undoRunSummary[:len(undoRunSummary):len(undoRunSummary)],
	`DROP INDEX session_items_behind`,
	`ALTER TABLE session_items DROP COLUMN behind`,
	`CREATE INDEX session_items_stamps ON session_items (session_id, stamp)`,
	`DELETE FROM schema_version WHERE version >= 10`,
)

// execAll runs qs on db, in order.
func execAll(t *testing.T, db *sql.DB, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// toVersion7 sets the file at path back to schema version 7: the indexes
// of calls and of outputs of migration 0002 in place of 0008's one.
func toVersion7(t *testing.T, path string) {
	t.Helper()
	db := rawDB(t, path)
	execAll(t, db, undoStampsBehind...)
	for _, q := range []string{
		`DROP INDEX session_items_call_ids`,
		`CREATE INDEX session_items_calls ON session_items (session_id, place, call_id, seq)
			WHERE call_id IS NOT NULL AND answers IS NULL`,
		`CREATE UNIQUE INDEX session_items_answers ON session_items (session_id, place, call_id, answers)
			WHERE answers IS NOT NULL`,
		`DELETE FROM schema_version WHERE version >= 8`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCallIndexMigration checks that migration 0008 moves a file's calls
// and outputs from the two indexes of migration 0002 to the one of calls
// and outputs, and that the checks they served hold on the rows stored
// before it: a call answered refuses a second output, a call unanswered
// takes its first, a later call of the same ID its own.
func TestCallIndexMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	if err := s.Append(ctx, "s", "run", []state.Item{
		state.ToolCall("fc_a", "call_a", "lookup", `{}`).WithSeq(1),
		state.ToolOutput("call_a", "lookup", `"a"`).WithSeq(2),
		state.ToolCall("fc_b", "call_b", "lookup", `{}`).WithSeq(3),
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	toVersion7(t, path)

	s = open(t, path)
	db := rawDB(t, path)
	var names []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'session_items' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"session_items_behind", "session_items_call_ids"}; !slices.Equal(names, want) {
		t.Fatalf("indexes of session_items after the migration = %q, want %q", names, want)
	}

	err = s.Append(ctx, "s", "run", []state.Item{state.ToolOutput("call_a", "lookup", `"again"`).WithSeq(4)})
	if !errors.Is(err, session.ErrDuplicateOutput) {
		t.Fatalf("second output of call_a, stored before the migration: Append = %v, want ErrDuplicateOutput", err)
	}
	if err := s.Append(ctx, "s", "run", []state.Item{
		state.ToolOutput("call_b", "lookup", `"b"`).WithSeq(4),
		state.ToolCall("fc_a2", "call_a", "lookup", `{}`).WithSeq(5),
		state.ToolOutput("call_a", "lookup", `"a2"`).WithSeq(6),
	}); err != nil {
		t.Fatalf("first outputs of call_b, stored before the migration, and of a later call_a: Append = %v", err)
	}
	var answers []sql.NullInt64
	rows, err = db.Query(`SELECT answers FROM session_items WHERE session_id = 's' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a sql.NullInt64
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		answers = append(answers, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []sql.NullInt64{{}, {Int64: 1, Valid: true}, {}, {Int64: 3, Valid: true}, {}, {Int64: 5, Valid: true}}
	if !slices.Equal(answers, want) {
		t.Errorf("answers by seq = %v, want %v", answers, want)
	}
}

// TestStampFloorMigration checks that a file written before migration
// 0009, whose session_stamps held the last stamp taken (the counter an
// append moved on), goes on above it: here a counter at 5 over items
// stamped up to 2, as two pops of the items of stamps 3 to 5 left it.
func TestStampFloorMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	if err := s.Append(ctx, "s", "run", []state.Item{state.UserMessage("hi").WithSeq(1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s", "run", []state.Item{state.AssistantMessage("m", "hello").WithSeq(2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	execAll(t, db, undoStampsBehind...)
	for _, q := range []string{
		`INSERT INTO session_stamps (session_id, stamp) VALUES ('s', 5)`,
		`DELETE FROM schema_version WHERE version >= 9`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s = open(t, path)
	if err := s.Append(ctx, "s", "run", []state.Item{state.UserMessage("again").WithSeq(3)}); err != nil {
		t.Fatal(err)
	}
	ch, err := s.ReadChanges(ctx, "s", session.ChangeQuery{Since: 1})
	if err != nil {
		t.Fatal(err)
	}
	var stamp int64
	if err := db.QueryRow(`SELECT stamp FROM session_items WHERE session_id = 's' AND seq = 3`).Scan(&stamp); err != nil {
		t.Fatal(err)
	}
	if stamp != 6 || ch.Stamp != 7 {
		t.Errorf("after the migration, the next append's stamp = %d, the session's next = %d; want 6 (above the counter's 5) and 7", stamp, ch.Stamp)
	}
}

// TestStampsBehindMigration checks that migration 0010 marks behind the
// items of a file written before it that an item after them precedes in
// the stamps' order, and no other, and that the session's changes read
// from every stamp after it are what the items' stamps say: here two
// runs that interleave, a position filled late, and a pop.
func TestStampsBehindMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	msg := func(seq int64) state.Item { return state.AssistantMessage("m", "x").WithSeq(seq) }
	for _, a := range []struct {
		run   string
		items []state.Item
	}{
		{"a", []state.Item{msg(1), msg(2)}}, // stamp 1, place 1
		{"b", []state.Item{msg(1)}},         // 2, place 2
		{"a", []state.Item{msg(4)}},         // 3: behind (2, 1)
		{"b", []state.Item{msg(2), msg(3)}}, // 4
		{"a", []state.Item{msg(3)}},         // 5: behind (1, 4) and (2, *)
		{"b", []state.Item{msg(4), msg(5)}}, // 6: (2, 5) popped below
	} {
		if err := s.Append(ctx, "s", a.run, a.items); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := s.Pop(ctx, "s"); err != nil || !ok {
		t.Fatalf("Pop = %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	execAll(t, db, undoStampsBehind...)

	s = open(t, path)
	if got, want := placedAt(t, db, `SELECT place, seq FROM session_items WHERE behind IS NOT NULL ORDER BY place, seq`),
		[][]int64{{1, 3}, {1, 4}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("items behind after the migration = %v, want %v", got, want)
	}
	check := func(what string) {
		t.Helper()
		var next int64
		if err := db.QueryRow(`SELECT max(COALESCE((SELECT stamp FROM session_stamps WHERE session_id = 's'), 0),
			(SELECT max(stamp) FROM session_items WHERE session_id = 's')) + 1`).Scan(&next); err != nil {
			t.Fatal(err)
		}
		for since := int64(1); since <= next; since++ {
			want := placedAt(t, db, `SELECT place, seq FROM session_items WHERE session_id = 's' AND stamp >= ? ORDER BY place, seq`, since)
			ch, err := s.ReadChanges(ctx, "s", session.ChangeQuery{Since: since})
			if err != nil {
				t.Fatal(err)
			}
			var got [][]int64
			for _, p := range ch.Items {
				got = append(got, []int64{p.Place, p.Item.Seq()})
			}
			if !slices.EqualFunc(got, want, slices.Equal) || ch.Stamp != next {
				t.Errorf("%s: changes since stamp %d = %v, stamp %d; want %v, stamp %d", what, since, got, ch.Stamp, want, next)
			}
		}
	}
	check("after the migration")
	if err := s.Append(ctx, "s", "b", []state.Item{msg(5)}); err != nil {
		t.Fatal(err)
	}
	check("after an append")
}

// placedAt returns the (place, seq) of the rows query reads from db.
func placedAt(t *testing.T, db *sql.DB, query string, args ...any) [][]int64 {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]int64
	for rows.Next() {
		var place, seq int64
		if err := rows.Scan(&place, &seq); err != nil {
			t.Fatal(err)
		}
		out = append(out, []int64{place, seq})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pieceKey returns the columns of the checkpoint pieces' primary key, in
// order.
func pieceKey(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM pragma_index_info(
		(SELECT name FROM pragma_index_list('run_checkpoint_items') WHERE origin = 'pk')) ORDER BY seqno`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cols
}

// piecesTurn records a tool turn on r as the checkpointer does: the call,
// its output, a model call and a guardrail result, so that a save writes
// pieces above zero, below -2^40 and between.
func piecesTurn(t *testing.T, r *state.Run, turn int) {
	t.Helper()
	first := runcore.Reserve(r, 2)
	call := fmt.Sprintf("call_%d", turn)
	if err := runcore.RecordAll(r, state.ToolCall("fc_"+call, call, "lookup", `{"q":"x"}`).WithSeq(first),
		state.ToolOutput(call, "lookup", `"y"`).WithSeq(first+1)); err != nil {
		t.Fatal(err)
	}
	runcore.SetResponse(r, state.Boundary{Start: first, End: first + 1, OutputsEnd: first + 2})
	runcore.SetTurn(r, turn)
	runcore.AddModelCall(r, state.ModelCall{Turn: turn, Agent: "assistant", Model: "m", ResponseID: "resp_" + call, Seq: first})
	r.AddGuardrailResult(state.GuardrailResult{Name: "args", Stage: state.StageToolInput, Turn: turn, CallID: call})
}

// TestPieceOrderMigration checks that migration 0012, which keys the
// checkpoint pieces by run, version and position where they were keyed
// by run and position, keeps every checkpoint of a file written before
// it: each loads as the run that was saved, over saves of items, model
// calls and guardrail results, and saves on from there, a delta over the
// rows the migration moved.
func TestPieceOrderMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	runs := []*state.Run{statetest.SampleRun(t, "many-saves"), statetest.SampleRun(t, "one-save")}
	for _, r := range runs {
		if err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for turn := 3; turn < 9; turn++ {
		piecesTurn(t, runs[0], turn)
		if err := s.Save(ctx, runs[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	execAll(t, db, undoPieceOrder...)
	if got, want := pieceKey(t, db), []string{"run_id", "seq"}; !slices.Equal(got, want) {
		t.Fatalf("pieces' key set back = %v, want %v", got, want)
	}

	s = open(t, path)
	if got, want := pieceKey(t, db), []string{"run_id", "version", "seq"}; !slices.Equal(got, want) {
		t.Errorf("pieces' key after the migration = %v, want %v", got, want)
	}
	for _, want := range runs {
		got, err := s.Load(ctx, want.ID())
		if err != nil {
			t.Fatalf("Load(%s) after the migration = %v", want.ID(), err)
		}
		if d := statetest.Diff(t, got, want); d != "" {
			t.Errorf("run %s after the migration (-saved +loaded):\n%s", want.ID(), d)
		}
		piecesTurn(t, got, 20)
		if err := s.Save(ctx, got); err != nil {
			t.Fatalf("Save(%s) after the migration = %v", want.ID(), err)
		}
		again, err := s.Load(ctx, want.ID())
		if err != nil {
			t.Fatalf("Load(%s) after a save on the migrated rows = %v", want.ID(), err)
		}
		if d := statetest.Diff(t, again, got); d != "" {
			t.Errorf("run %s saved after the migration (-saved +loaded):\n%s", want.ID(), d)
		}
	}
}
