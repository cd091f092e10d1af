package riverrun_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/riverrun"
	"github.com/turnkit/turnkit/session/encrypt"
)

// TestEraseReachesRiver erases a session whose runs went through River
// (one paused, decided and finished; one failed with the user's words
// in its error) and then searches every table of the schema, River's
// job table with its arguments, outputs and errors among them, for what
// the user said: nothing is left. Another session's jobs stay.
func TestEraseReachesRiver(t *testing.T) {
	e := newEnv(t, pgBackend(t), openPG, "transfer")
	ctx := t.Context()
	start := func(run, sid, text string) *rivertype.JobRow {
		t.Helper()
		res, err := e.runs.Enqueue(ctx, riverrun.Start{RunID: run, Agent: "agent", SessionID: sid, Text: text}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCompleted, rivertype.JobStateCancelled)
	}
	paused := output(t, start("e1", "gone", "pay 40 EUR to SECRET-IBAN-1"))
	if _, err := e.runs.Decide(ctx, "e1", riverrun.Approve(paused.Pending[0].CallID)); err != nil {
		t.Fatal(err)
	}
	if out := output(t, waitRunJob(t, e.runs, "e1", rivertype.JobStateCompleted)); out.Status != riverrun.StatusFinished {
		t.Fatalf("e1's resume job output = %+v, want finished", out)
	}
	e.stack.model.FailNext("e2", &pipeline.ModelError{Status: 400, Err: errors.New("cannot read SECRET-IBAN-2")})
	if j := start("e2", "gone", "and SECRET-IBAN-2 too"); j.State != rivertype.JobStateCancelled || len(j.Errors) == 0 {
		t.Fatalf("e2's job %s, errors %v; want cancelled with the model's error", j.State, j.Errors)
	}
	start("k1", "kept", "KEEP-THIS")

	search := tableSearch(t, e.b)
	if got := search("SECRET-IBAN-"); got["river_job"] != 2 || len(got) < 2 {
		t.Fatalf("before erasure: the search finds %v, want the 2 start jobs in river_job and the session's items", got)
	}
	n, err := e.runs.Erase(ctx, "gone")
	if err != nil || n != 3 {
		t.Fatalf("Erase = %d, %v; want the 3 jobs of the session (two starts, one resume)", n, err)
	}
	rep, err := encrypt.Erase(ctx, e.store, e.store, "gone")
	if err != nil || rep.Runs != 2 || rep.Items == 0 {
		t.Fatalf("encrypt.Erase = %+v, %v; want 2 runs and their items", rep, err)
	}
	if got := search("SECRET-IBAN-"); len(got) != 0 {
		t.Errorf("after erasure, the session's content is in %v", got)
	}
	if got := search("KEEP-THIS"); got["river_job"] != 1 {
		t.Errorf("the other session's job: the search finds %v, want it in river_job", got)
	}
	if n, err := e.runs.Erase(ctx, "gone"); err != nil || n != 0 {
		t.Errorf("second Erase = %d, %v; want 0, nil", n, err)
	}
}

// tableSearch returns a search of every table of the backend's
// PostgreSQL schema for rows whose text contains a string, as text or as
// bytes (a bytea column's text is hex): the number of such rows per
// table.
func tableSearch(t *testing.T, b backend) func(string) map[string]int {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), b.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rows, err := pool.Query(t.Context(), "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'", b.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 3 {
		t.Fatalf("tables of schema %s: %v, %v", b.Schema, tables, err)
	}
	return func(s string) map[string]int {
		found := map[string]int{}
		for _, table := range tables {
			var n int
			q := "SELECT count(*) FROM " + pgx.Identifier{b.Schema, table}.Sanitize() + " AS t WHERE t::text LIKE '%' || $1 || '%' OR t::text LIKE '%' || encode(convert_to($1, 'UTF8'), 'hex') || '%'"
			if err := pool.QueryRow(t.Context(), q, s).Scan(&n); err != nil {
				t.Fatalf("search %s: %v", table, err)
			}
			if n > 0 {
				found[table] = n
			}
		}
		return found
	}
}

// TestEraseOnSQLite: Erase finds a session's jobs by their arguments on
// River's SQLite driver too.
func TestEraseOnSQLite(t *testing.T) {
	e := newEnv(t, sqliteBackend(t), openSQLite, "transfer")
	res, err := e.runs.Enqueue(t.Context(), riverrun.Start{RunID: "e1", Agent: "agent", SessionID: "gone", Text: "SECRET"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, e.rc, res.Job.ID, rivertype.JobStateCompleted)
	if n, err := e.runs.Erase(t.Context(), "gone"); err != nil || n != 1 {
		t.Fatalf("Erase = %d, %v; want the start job", n, err)
	}
	if jobs, err := e.runs.Jobs(t.Context(), "e1"); err != nil || len(jobs) != 0 {
		t.Fatalf("after Erase the run has %d jobs (%v), want none", len(jobs), err)
	}
}

// TestEraseRunningJob: a job still running when Erase is called is
// cancelled, and a repeated Erase deletes it once it stopped; until then
// Erase says it is running.
func TestEraseRunningJob(t *testing.T) {
	e := newEnv(t, pgBackend(t), openPG, "effect")
	ctx := t.Context()
	e.stack.block.Store(true) // the tool waits for its context to end
	res, err := e.runs.Enqueue(ctx, riverrun.Start{RunID: "busy", Agent: "agent", SessionID: "gone", Text: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, e.rc, res.Job.ID, rivertype.JobStateRunning)
	for len(e.stack.fx.OfRun("busy")) == 0 {
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(20 * time.Second)
	total, calls := 0, 0
	for {
		calls++
		n, err := e.runs.Erase(ctx, "gone")
		total += n
		if err == nil {
			break
		}
		if !errors.Is(err, riverrun.ErrJobsRunning) || time.Now().After(deadline) {
			t.Fatalf("Erase = %d, %v; want ErrJobsRunning until the job stops", n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if jobs, err := e.runs.Jobs(ctx, "busy"); total != 1 || err != nil || len(jobs) != 0 {
		t.Fatalf("Erase deleted %d jobs in all, %d left (%v); want the one job gone", total, len(jobs), err)
	}
	t.Logf("the job was deleted by call %d of Erase", calls)
}
