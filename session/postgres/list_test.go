package postgres_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// TestListingMigration checks that the migration adding the listing's
// index files the checkpoints stored before it by what their heads say:
// a schema whose index is dropped and whose version is set back one
// lists, once migrated again, what it listed before, and a head that is
// not JSON as an unfinished run.
func TestListingMigration(t *testing.T) {
	before, s := migrateAgain(t, []*state.Run{
		statetest.RunWithStatus(t, "a", "s1", state.RunFinished),
		statetest.RunWithStatus(t, "b", "s1", state.RunPaused),
		statetest.RunWithStatus(t, "c", "", state.RunUnfinished),
		statetest.RunWithStatus(t, "d", "s2", state.RunPaused),
	}, func(sch string) []string {
		return []string{
			`DROP TABLE ` + sch + `.run_index`,
			`ALTER TABLE ` + sch + `.run_checkpoints DROP COLUMN agent, DROP COLUMN turn, DROP COLUMN pending`,
			`DROP TABLE ` + sch + `.session_index`,
			`DROP INDEX ` + sch + `.session_runs_place`,
			`ALTER TABLE ` + sch + `.session_heads DROP COLUMN stamp`,
			`ALTER TABLE ` + sch + `.session_heads DROP COLUMN gen`, // and the stamps index goes with the items' stamp
			`ALTER TABLE ` + sch + `.session_items DROP COLUMN stamp`,
			`DELETE FROM ` + sch + `.schema_version WHERE version >= 4`,
			`INSERT INTO ` + sch + `.run_checkpoints (run_id, version, data) VALUES ('e', 1, '\x00ff'::bytea)`,
		}
	})
	ctx := t.Context()
	after, err := s.ListRuns(ctx, state.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]state.RunSummary{{RunID: "e", Status: state.RunUnfinished, Version: 1}}, before...)
	if d := cmp.Diff(want, after.Runs); d != "" {
		t.Errorf("runs listed after the migration (-want +got):\n%s", d)
	}
	paused, err := s.ListRuns(ctx, state.RunQuery{Status: state.RunPaused, SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(paused.Runs) != 1 || paused.Runs[0].RunID != "b" || paused.Runs[0].Pending != 1 {
		t.Errorf("paused runs of s1 after the migration: %+v, want b with 1 pending", paused.Runs)
	}
}

// TestRunSummaryMigration checks that the migration moving the summary's
// agent, turn and pending approvals from the listing's rows to the heads'
// (0008_run_summary.sql) keeps what a listing shows: a schema set back
// to version 7, its summaries in run_index again, lists, once migrated
// again, what it listed before.
func TestRunSummaryMigration(t *testing.T) {
	before, s := migrateAgain(t, []*state.Run{
		statetest.RunWithStatus(t, "a", "s1", state.RunFinished),
		statetest.RunWithStatus(t, "b", "s1", state.RunPaused),
		statetest.RunWithStatus(t, "c", "", state.RunUnfinished),
	}, func(sch string) []string {
		return []string{
			`ALTER TABLE ` + sch + `.run_index ADD COLUMN agent text NOT NULL DEFAULT '',
			ADD COLUMN turn bigint NOT NULL DEFAULT 0, ADD COLUMN pending bigint NOT NULL DEFAULT 0,
			ADD COLUMN version bigint NOT NULL DEFAULT 0`,
			`UPDATE ` + sch + `.run_index AS i SET agent = c.agent, turn = c.turn, pending = c.pending, version = c.version
			FROM ` + sch + `.run_checkpoints AS c WHERE c.run_id = i.run_id`,
			`ALTER TABLE ` + sch + `.run_checkpoints DROP COLUMN agent, DROP COLUMN turn, DROP COLUMN pending`,
			`DELETE FROM ` + sch + `.schema_version WHERE version >= 8`,
		}
	})
	after, err := s.ListRuns(t.Context(), state.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, after.Runs); d != "" {
		t.Errorf("runs listed after the migration (-before +after):\n%s", d)
	}
}

// migrateAgain saves runs in a store of a schema of its own, lists them,
// closes the store, sets the schema back with the statements setBack
// gives for its quoted name, and opens a store on it again, which
// migrates it forward: it returns what was listed before and the new
// store, closed when the test ends.
func migrateAgain(t *testing.T, runs []*state.Run, setBack func(schema string) []string) ([]state.RunSummary, *postgres.Store) {
	t.Helper()
	schema, pool := testSchema(t)
	ctx := t.Context()
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.ListRuns(ctx, state.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, q := range setBack(pgx.Identifier{schema}.Sanitize()) {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err = postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return before.Runs, s
}

// TestSaveKeepsListingRow checks that a save of a run whose session and
// status stay as they were writes no new version of the run's listing
// row (its xmin stays), while the listing still shows the run's turn and
// version as of its last save, and that a save that changes the status
// rewrites the row, keeping its number.
func TestSaveKeepsListingRow(t *testing.T) {
	schema, pool := testSchema(t)
	ctx := t.Context()
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	listing := func() (xmin string, serial int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT xmin::text, serial FROM `+pgx.Identifier{schema}.Sanitize()+`.run_index
			WHERE run_id = 'r'`).Scan(&xmin, &serial); err != nil {
			t.Fatal(err)
		}
		return xmin, serial
	}
	r := statetest.RunWithStatus(t, "r", "s", state.RunUnfinished)
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	xmin, serial := listing()
	for turn := 3; turn < 6; turn++ {
		runcore.SetTurn(r, turn)
		if err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
		if gotXmin, gotSerial := listing(); gotXmin != xmin || gotSerial != serial {
			t.Fatalf("after a save at turn %d: listing row xmin %s, serial %d; want %s, %d (not rewritten)", turn, gotXmin, gotSerial, xmin, serial)
		}
	}
	p, err := s.ListRuns(ctx, state.RunQuery{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	want := []state.RunSummary{{RunID: "r", SessionID: "s", Agent: "lister", Turn: 5, Status: state.RunUnfinished, Version: 4}}
	if d := cmp.Diff(want, p.Runs); d != "" {
		t.Errorf("runs of s (-want +got):\n%s", d)
	}
	runcore.Finish(r, "done")
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	if gotXmin, gotSerial := listing(); gotXmin == xmin || gotSerial != serial {
		t.Errorf("after the run finished: listing row xmin %s, serial %d; want a new version of the row, serial %d", gotXmin, gotSerial, serial)
	}
	p, err = s.ListRuns(ctx, state.RunQuery{Status: state.RunFinished})
	if err != nil {
		t.Fatal(err)
	}
	want[0].Status, want[0].Version = state.RunFinished, 5
	if d := cmp.Diff(want, p.Runs); d != "" {
		t.Errorf("finished runs (-want +got):\n%s", d)
	}
}
