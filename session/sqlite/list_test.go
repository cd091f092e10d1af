package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	for _, q := range []string{
		`DROP TABLE run_index`,
		`DELETE FROM sqlite_sequence WHERE name = 'run_index'`,
		`DROP TABLE session_index`,
		`DELETE FROM sqlite_sequence WHERE name = 'session_index'`,
		undoStampsBehind[0], undoStampsBehind[1], // 0010
		`DROP TABLE session_stamps`,
		`DROP INDEX session_items_call_ids`, // back to migration 0002's indexes
		`CREATE INDEX session_items_calls ON session_items (session_id, place, call_id, seq)
			WHERE call_id IS NOT NULL AND answers IS NULL`,
		`CREATE UNIQUE INDEX session_items_answers ON session_items (session_id, place, call_id, answers)
			WHERE answers IS NOT NULL`,
		`ALTER TABLE session_items DROP COLUMN stamp`,
		`DELETE FROM schema_version WHERE version >= 4`,
		`INSERT INTO run_checkpoints (run_id, version, data) VALUES ('e', 1, x'00ff')`,
	} {
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
