package postgres_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

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
	schema, pool := testSchema(t)
	ctx := t.Context()
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*state.Run{
		statetest.RunWithStatus(t, "a", "s1", state.RunFinished),
		statetest.RunWithStatus(t, "b", "s1", state.RunPaused),
		statetest.RunWithStatus(t, "c", "", state.RunUnfinished),
		statetest.RunWithStatus(t, "d", "s2", state.RunPaused),
	} {
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
	sch := pgx.Identifier{schema}.Sanitize()
	for _, q := range []string{
		`DROP TABLE ` + sch + `.run_index`,
		`DROP TABLE ` + sch + `.session_index`,
		`DROP INDEX ` + sch + `.session_runs_place`,
		`ALTER TABLE ` + sch + `.session_heads DROP COLUMN stamp`,
		`ALTER TABLE ` + sch + `.session_heads DROP COLUMN gen`, // and the stamps index goes with the items' stamp
		`ALTER TABLE ` + sch + `.session_items DROP COLUMN stamp`,
		`DELETE FROM ` + sch + `.schema_version WHERE version >= 4`,
		`INSERT INTO ` + sch + `.run_checkpoints (run_id, version, data) VALUES ('e', 1, '\x00ff'::bytea)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err = postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, err := s.ListRuns(ctx, state.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]state.RunSummary{{RunID: "e", Status: state.RunUnfinished, Version: 1}}, before.Runs...)
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
