package conversation_test

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

// An upgrade is a backend whose database can be set back to its schema
// before write stamps (migration 6), as an earlier version left it.
type upgrade struct {
	backend
	downgrade func(t *testing.T)
}

func upgrades(t *testing.T) []upgrade {
	path := filepath.Join(t.TempDir(), "upgrade.db")
	sqliteDowngrade := func(t *testing.T) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, q := range []string{
			`DROP TRIGGER run_checkpoints_filed`, // 0013: the listing's row written by the store again
			`DROP TRIGGER run_checkpoints_refiled`,
			`ALTER TABLE run_checkpoints DROP COLUMN session_id`,
			`ALTER TABLE run_checkpoints DROP COLUMN status`,
			`CREATE TABLE run_checkpoint_by_seq (run_id TEXT NOT NULL, seq INTEGER NOT NULL, version INTEGER NOT NULL,
				data BLOB NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID`, // 0012: the pieces keyed by run and position
			`INSERT INTO run_checkpoint_by_seq (run_id, seq, version, data) SELECT run_id, seq, version, data FROM run_checkpoint_items`,
			`DROP TABLE run_checkpoint_items`,
			`ALTER TABLE run_checkpoint_by_seq RENAME TO run_checkpoint_items`,
			`ALTER TABLE run_index ADD COLUMN agent TEXT NOT NULL DEFAULT ''`, // 0011: the summary back in run_index
			`ALTER TABLE run_index ADD COLUMN turn INTEGER NOT NULL DEFAULT 0`,
			`ALTER TABLE run_index ADD COLUMN pending INTEGER NOT NULL DEFAULT 0`,
			`ALTER TABLE run_index ADD COLUMN version INTEGER NOT NULL DEFAULT 0`,
			`UPDATE run_index AS i SET agent = c.agent, turn = c.turn, pending = c.pending, version = c.version
				FROM run_checkpoints AS c WHERE c.run_id = i.run_id`,
			`ALTER TABLE run_checkpoints DROP COLUMN agent`,
			`ALTER TABLE run_checkpoints DROP COLUMN turn`,
			`ALTER TABLE run_checkpoints DROP COLUMN pending`,
			`DROP INDEX session_items_behind`, // 0010
			`ALTER TABLE session_items DROP COLUMN behind`,
			`DROP INDEX session_items_call_ids`, // 0008: back to 0002's indexes
			`CREATE INDEX session_items_calls ON session_items (session_id, place, call_id, seq)
				WHERE call_id IS NOT NULL AND answers IS NULL`,
			`CREATE UNIQUE INDEX session_items_answers ON session_items (session_id, place, call_id, answers)
				WHERE answers IS NOT NULL`,
			`DROP TABLE session_stamps`, // 0007's index went with 0010
			`ALTER TABLE session_items DROP COLUMN stamp`,
			`DELETE FROM schema_version WHERE version >= 6`,
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	schema := "turnkit_upgrade_" + randomID(t)
	pgOpen := func(t *testing.T) (session.Store, state.Store) {
		s, err := postgres.Open(t.Context(), testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"), postgres.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, s
	}
	pgExec := func(t *testing.T, qs ...string) {
		ctx := context.Background() // also in a cleanup, after t's context ended
		conn, err := pgx.Connect(ctx, testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for _, q := range qs {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	sch := pgx.Identifier{schema}.Sanitize()
	return []upgrade{
		{sqliteBackend(path), sqliteDowngrade},
		{backend{"postgres", func(t *testing.T) (session.Store, state.Store) {
			t.Cleanup(func() { pgExec(t, `DROP SCHEMA IF EXISTS `+sch+` CASCADE`) })
			return pgOpen(t)
		}}, func(t *testing.T) {
			pgExec(t,
				// 0008: the summary back in run_index.
				`ALTER TABLE `+sch+`.run_index ADD COLUMN agent text NOT NULL DEFAULT '',
					ADD COLUMN turn bigint NOT NULL DEFAULT 0, ADD COLUMN pending bigint NOT NULL DEFAULT 0,
					ADD COLUMN version bigint NOT NULL DEFAULT 0`,
				`UPDATE `+sch+`.run_index AS i SET agent = c.agent, turn = c.turn, pending = c.pending, version = c.version
					FROM `+sch+`.run_checkpoints AS c WHERE c.run_id = i.run_id`,
				`ALTER TABLE `+sch+`.run_checkpoints DROP COLUMN agent, DROP COLUMN turn, DROP COLUMN pending`,
				`ALTER TABLE `+sch+`.session_heads DROP COLUMN gen`, // 0007; its index goes with the items' stamp
				`ALTER TABLE `+sch+`.session_heads DROP COLUMN stamp`,
				`ALTER TABLE `+sch+`.session_items DROP COLUMN stamp`,
				`DELETE FROM `+sch+`.schema_version WHERE version >= 6`)
		}},
	}
}

// stampInNote matches the stamp of the history note Marshal writes.
var stampInNote = regexp.MustCompile(`,"stamp":[0-9]+`)

// TestUpgradeKeepsPausedRuns: a database of the version before write
// stamps, with a paused run whose checkpoint refers to its history
// without a stamp, is migrated when a process of this version opens it:
// the items stored get stamps, the checkpoint loads and resumes with
// exactly the input the live run had, and a run paused after the upgrade
// refers by stamp, so an earlier run going on no longer moves its history.
func TestUpgradeKeepsPausedRuns(t *testing.T) {
	for _, u := range upgrades(t) {
		t.Run(u.name, func(t *testing.T) {
			sid := "s-" + randomID(t)
			p := startWith(t, u.backend, nil)
			p.message(t, sid, "r0", "hello")
			res := p.message(t, sid, "old", "transfer")
			if !res.Interrupted() {
				t.Fatal("the transfer did not pause")
			}
			live := sentTo(p.model, "old", 1)
			callID := res.Interruptions()[0].CallID

			// The checkpoint as the earlier version saved it: a reference
			// without a stamp (saved again from a document whose note has
			// none).
			run, err := p.states.Load(t.Context(), "old")
			if err != nil {
				t.Fatal(err)
			}
			data, err := state.Marshal(run)
			if err != nil {
				t.Fatal(err)
			}
			old := stampInNote.ReplaceAll(data, nil)
			if bytes.Equal(old, data) {
				t.Fatal("the marshaled run has no stamp to remove")
			}
			earlier, err := state.Unmarshal(old)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.states.Save(t.Context(), earlier); err != nil {
				t.Fatal(err)
			}
			u.downgrade(t)

			// A process of this version opens (and migrates) the database.
			q := startWith(t, u.backend, nil)
			h, err := q.ss.ListBefore(t.Context(), sid, "next", session.HistoryQuery{})
			if err != nil {
				t.Fatal(err)
			}
			// r0's four items and the paused run's input.
			if len(h.Items) != 5 || h.Stamp != 6 {
				t.Fatalf("after the upgrade: %d items, next stamp %d; want 5 items stamped 1 to 5", len(h.Items), h.Stamp)
			}
			loaded, err := q.states.Load(t.Context(), "old")
			if err != nil {
				t.Fatal(err)
			}
			if got := loaded.HistoryStamp(); got != 0 {
				t.Fatalf("HistoryStamp() of the earlier checkpoint = %d, want 0", got)
			}
			if err := loaded.Approve(callID); err != nil {
				t.Fatal(err)
			}
			if _, err := q.runner.Resume(t.Context(), q.agent, loaded); err != nil {
				t.Fatalf("resume of the earlier checkpoint: %v", err)
			}
			got := sentTo(q.model, "old", 2)
			if len(got) != len(live)+2 || !slices.Equal(got[:len(live)], live) {
				t.Fatalf("resumed model input (%d items) does not extend the live one (%d items):\n%q\n%q", len(got), len(live), got, live)
			}

			// Runs after the upgrade refer by stamp.
			first := q.message(t, sid, "p1", "transfer")
			second := q.message(t, sid, "p2", "transfer")
			if s := second.State().HistoryStamp(); s <= h.Stamp {
				t.Fatalf("HistoryStamp() of a run after the upgrade = %d, want above %d", s, h.Stamp)
			}
			for id, res := range map[string]*pipeline.Result{"p1": first, "p2": second} {
				if err := q.approveResume(t, id, res.Interruptions()[0].CallID); err != nil {
					t.Fatalf("resume of %s: %v", id, err)
				}
			}
		})
	}
}
