package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// TestListingMigration checks that the migration adding the listing's
// index files the checkpoints stored before it by what their heads say:
// a file whose index is dropped and whose schema is set back one version
// lists, once opened again, what it listed before, and a head that is
// not JSON as an unfinished run.
func TestListingMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	for _, r := range []*state.Run{
		statetest.RunWithStatus(t, "a", "s1", state.RunFinished),
		statetest.RunWithStatus(t, "b", "s1", state.RunPaused),
		statetest.RunWithStatus(t, "c", "", state.RunUnfinished),
		statetest.RunWithStatus(t, "d", "s2", state.RunPaused),
	} {
		if err := s.Save(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.ListRuns(t.Context(), state.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range append(undoListingTrigger[:len(undoListingTrigger)-1:len(undoListingTrigger)-1],
		`DROP TABLE run_index`,
		`DELETE FROM sqlite_sequence WHERE name = 'run_index'`,
		`DROP TABLE session_index`,
		`DELETE FROM sqlite_sequence WHERE name = 'session_index'`,
		`ALTER TABLE run_checkpoints DROP COLUMN agent`, // 0011
		`ALTER TABLE run_checkpoints DROP COLUMN turn`,
		`ALTER TABLE run_checkpoints DROP COLUMN pending`,
		`DROP INDEX session_items_behind`, // 0010
		`ALTER TABLE session_items DROP COLUMN behind`,
		`DROP TABLE session_stamps`,
		`DROP INDEX session_items_call_ids`, // back to migration 0002's indexes
		`CREATE INDEX session_items_calls ON session_items (session_id, place, call_id, seq)
			WHERE call_id IS NOT NULL AND answers IS NULL`,
		`CREATE UNIQUE INDEX session_items_answers ON session_items (session_id, place, call_id, answers)
			WHERE answers IS NOT NULL`,
		`ALTER TABLE session_items DROP COLUMN stamp`,
		`DELETE FROM schema_version WHERE version >= 4`,
		`INSERT INTO run_checkpoints (run_id, version, data) VALUES ('e', 1, x'00ff')`,
	) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s = open(t, path)
	after, err := s.ListRuns(t.Context(), state.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]state.RunSummary{{RunID: "e", Status: state.RunUnfinished, Version: 1}}, before.Runs...)
	if d := cmp.Diff(want, after.Runs); d != "" {
		t.Errorf("runs listed after the migration (-want +got):\n%s", d)
	}
	paused, err := s.ListRuns(t.Context(), state.RunQuery{Status: state.RunPaused, SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(paused.Runs) != 1 || paused.Runs[0].RunID != "b" || paused.Runs[0].Pending != 1 {
		t.Errorf("paused runs of s1 after the migration: %+v, want b with 1 pending", paused.Runs)
	}
}

// TestRunSummaryMigration checks that migration 0011, which moves the
// columns of a run's summary that every save changes from run_index to
// the run's head, lists on a file written before it what that file
// listed (agent, turn, pending approvals, version, in the same order and
// by the same filters), and that the runs it moved save and list on.
func TestRunSummaryMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	for _, r := range []*state.Run{
		statetest.RunWithStatus(t, "a", "s1", state.RunFinished),
		statetest.RunWithStatus(t, "b", "s1", state.RunPaused),
		statetest.RunWithStatus(t, "c", "", state.RunUnfinished),
		statetest.RunWithStatus(t, "d", "s2", state.RunPaused),
	} {
		if err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
		if r.ID() == "c" { // a second save: version 2
			runcore.SetTurn(r, 5)
			if err := s.Save(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	queries := []state.RunQuery{{}, {Status: state.RunPaused}, {SessionID: "s1"}, {SessionID: "s1", Status: state.RunPaused}}
	var before [][]state.RunSummary
	for _, q := range queries {
		p, err := s.ListRuns(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, p.Runs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execAll(t, rawDB(t, path), undoRunSummary...)

	s = open(t, path)
	for i, q := range queries {
		p, err := s.ListRuns(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(before[i], p.Runs); d != "" {
			t.Errorf("runs listed by %+v after the migration (-before +after):\n%s", q, d)
		}
	}
	r, err := s.Load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	runcore.SetTurn(r, 6)
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	p, err := s.ListRuns(ctx, state.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := state.RunSummary{RunID: "c", Agent: "lister", Turn: 6, Status: state.RunUnfinished, Version: 3}
	if i := slices.IndexFunc(p.Runs, func(s state.RunSummary) bool { return s.RunID == "c" }); i < 0 || p.Runs[i] != want {
		t.Errorf("run c listed after a save past the migration: %+v, want %+v", p.Runs, want)
	}
}

// TestSaveRefilesAStrayListing checks a steady save's head, written
// without the listing's columns where the head's row files the run where
// it is, against a row that files it elsewhere (changed behind the
// store's back, or left so by a migration): the save finds no such row,
// writes the head with its session and status, and the listing follows.
func TestSaveRefilesAStrayListing(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	db := rawDB(t, path)
	r := statetest.RunWithStatus(t, "r", "s", state.RunUnfinished)
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE run_checkpoints SET session_id = 'elsewhere', status = 3 WHERE run_id = 'r'`); err != nil {
		t.Fatal(err)
	}
	runcore.SetTurn(r, 3)
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	var session string
	var status int
	if err := db.QueryRow(`SELECT session_id, status FROM run_checkpoints WHERE run_id = 'r'`).Scan(&session, &status); err != nil {
		t.Fatal(err)
	}
	if session != "s" || state.RunStatus(status) != state.RunUnfinished {
		t.Errorf("head's row after the save: session %q, status %d; want %q, %d", session, status, "s", state.RunUnfinished)
	}
	p, err := s.ListRuns(ctx, state.RunQuery{SessionID: "s", Status: state.RunUnfinished})
	if err != nil {
		t.Fatal(err)
	}
	want := []state.RunSummary{{RunID: "r", SessionID: "s", Agent: "lister", Turn: 3, Status: state.RunUnfinished, Version: 2}}
	if d := cmp.Diff(want, p.Runs); d != "" {
		t.Errorf("the session's unfinished runs (-want +got):\n%s", d)
	}
}

// TestSaveKeepsListingRow checks that a save that changes neither the
// run's session nor its status leaves run_index and sqlite_sequence as
// they were (before migration 0011 every save rewrote the run's row and
// its three indexes, and its upsert took a new serial, which
// sqlite_sequence recorded), and that a save that changes the status
// moves the run in the listing, keeping its serial.
func TestSaveKeepsListingRow(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	db := rawDB(t, path)
	listing := func() (serial, seq int64) {
		t.Helper()
		if err := db.QueryRow(`SELECT (SELECT serial FROM run_index WHERE run_id = 'r'),
			(SELECT seq FROM sqlite_sequence WHERE name = 'run_index')`).Scan(&serial, &seq); err != nil {
			t.Fatal(err)
		}
		return serial, seq
	}
	r := statetest.RunWithStatus(t, "r", "s", state.RunUnfinished)
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	serial, seq := listing()
	for turn := 3; turn < 6; turn++ {
		runcore.SetTurn(r, turn)
		if err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
		if gotSerial, gotSeq := listing(); gotSerial != serial || gotSeq != seq {
			t.Fatalf("after a save at turn %d: serial %d, sqlite_sequence %d; want %d, %d (unchanged)", turn, gotSerial, gotSeq, serial, seq)
		}
	}
	runcore.Finish(r, "done")
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	if gotSerial, _ := listing(); gotSerial != serial {
		t.Errorf("after the run finished: serial %d, want %d", gotSerial, serial)
	}
	p, err := s.ListRuns(ctx, state.RunQuery{Status: state.RunFinished})
	if err != nil {
		t.Fatal(err)
	}
	want := []state.RunSummary{{RunID: "r", SessionID: "s", Agent: "lister", Turn: 5, Status: state.RunFinished, Version: 5}}
	if d := cmp.Diff(want, p.Runs); d != "" {
		t.Errorf("finished runs (-want +got):\n%s", d)
	}
}
