package scenario

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

// TestSamePostgresWrites checks that the raw-same-writes driver writes
// what the store writes, no less, no more, no other: it runs a few
// crash-safe tool turns of the raw rows' run through the store (the
// crash-safe chain, over one store, which commits with SaveAppend) in a
// schema of its own, recording each turn's writes, then has the driver,
// from the same history, write those turns at the same versions, and
// compares every table of the two schemas row by row, every column but
// the listings' serials (the run and session IDs are the same in both),
// and which of the rows each transaction wrote.
func TestSamePostgresWrites(t *testing.T) {
	url := os.Getenv("TURNKIT_POSTGRES_URL")
	if url == "" {
		t.Skip("TURNKIT_POSTGRES_URL is not set")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const storeSchema, turns = "turnbench_same_store", 4
	history := makeHistory(10)

	// The store's run: its first commit, turns tool turns, then a model
	// call that fails, whose failure the store is kept from saving.
	if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{storeSchema}.Sanitize()+` CASCADE`); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(ctx, pool, postgres.WithSchema(storeSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, rawSessionID, "history", history); err != nil {
		t.Fatal(err)
	}
	rec := &recordingPostgres{cappedPostgres: cappedPostgres{Store: st, left: 1 + 2*turns}}
	if err := runCapped(ctx, rec, &rec.cappedPostgres, turns); err != nil {
		t.Fatal(err)
	}
	// The log: the first commit, then save, commit (with two items) per
	// tool turn, at versions 1, 2, 3...
	if len(rec.log) != 1+2*turns {
		for _, e := range rec.log {
			t.Logf("v%d pieces %d items %d head %.300s", e.version, len(e.save.pieces), len(e.items), e.save.head)
		}
		t.Fatalf("the store's run wrote %d times, want %d", len(rec.log), 1+2*turns)
	}
	ws := make([]rawTurnWrites, turns)
	for k := range ws {
		save, commit := rec.log[1+2*k], rec.log[2+2*k]
		if save.items != nil || len(commit.items) != 2 || save.version != rawVersion(k) || commit.version != rawVersion(k)+1 {
			t.Fatalf("tool turn %d: not a save at version %d and a commit of two items: %+v, %+v", k, rawVersion(k), save, commit)
		}
		ws[k] = rawTurnWrites{save: save.save, commit: commit.save, items: commit.items}
	}

	// The driver, from the same history: its positions are the recorded
	// ones (moved on by no turn).
	drv := openSamePostgres(t)
	defer drv.close()
	if err := drv.seed(ctx, history); err != nil {
		t.Fatal(err)
	}
	if err := drv.reset(ctx, ws[0].save.head); err != nil {
		t.Fatal(err)
	}
	for k := range ws {
		if err := drv.turn(ctx, rawVersion(k), 0, &ws[k]); err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
	}

	want, got := schemaRows(t, pool, storeSchema), schemaRows(t, pool, sameSchema)
	for i, tb := range sameTables {
		if len(want[i]) == 0 {
			t.Errorf("%s: the store wrote no rows", tb.name)
		}
		if !slices.Equal(want[i], got[i]) {
			t.Errorf("%s: the driver stored %d rows, the store %d; they differ:\n driver: %q\n store:  %q", tb.name, len(got[i]), len(want[i]), got[i], want[i])
		}
	}
}

// sameTables are the store's tables a crash-safe run writes, with the
// columns that must match: all but the listings' serials.
var sameTables = []struct{ name, cols string }{
	{"run_checkpoints", "run_id, agent, pending, turn, version, data, context"},
	{"run_checkpoint_items", "run_id, seq, version, data"},
	{"run_index", "run_id, session_id, status"},
	{"session_heads", "session_id, last_place, stamp, gen"},
	{"session_runs", "session_id, run_id, place"},
	{"session_index", "session_id"},
	{"session_items", "session_id, place, seq, kind, name, raw, call_id, answers, stamp"},
}

// schemaRows returns the rows of each of sameTables in schema as text,
// in order, each with the rank of the transaction that wrote it among
// those that wrote the schema's rows: the rows a save or a commit wrote
// last come from one transaction, and the transactions in their order.
func schemaRows(t *testing.T, pool *pgxpool.Pool, schema string) [][]string {
	t.Helper()
	type row struct {
		xmin int64
		text string
	}
	tables := make([][]row, len(sameTables))
	var xmins []int64
	for i, tb := range sameTables {
		q := fmt.Sprintf(`SELECT xmin::text::bigint, ROW(%s)::text AS r FROM %s.%s ORDER BY r`, tb.cols, pgx.Identifier{schema}.Sanitize(), tb.name)
		rows, err := pool.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		var r row
		_, err = pgx.ForEachRow(rows, []any{&r.xmin, &r.text}, func() error {
			tables[i] = append(tables[i], r)
			xmins = append(xmins, r.xmin)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(xmins)
	xmins = slices.Compact(xmins)
	out := make([][]string, len(tables))
	for i, rows := range tables {
		for _, r := range rows {
			rank, _ := slices.BinarySearch(xmins, r.xmin)
			out[i] = append(out[i], fmt.Sprintf("tx %d: %s", rank, r.text))
		}
	}
	return out
}

// recordingPostgres records each save and SaveAppend that its
// cappedPostgres makes, with its version.
type recordingPostgres struct {
	cappedPostgres
	log []sameEvent
}

// A sameEvent is a save or a SaveAppend (items not nil) of version.
type sameEvent struct {
	version int64
	save    rawSave
	items   []state.Item
}

// record records run's delta, if the cap lets it be saved.
func (s *recordingPostgres) record(run *state.Run, items []state.Item) error {
	if s.left <= 0 {
		return nil
	}
	d, err := run.Delta()
	if err != nil {
		return err
	}
	s.log = append(s.log, sameEvent{version: d.Version, save: rawSave{head: d.Head, pieces: d.Items}, items: items})
	return nil
}

func (s *recordingPostgres) Save(ctx context.Context, run *state.Run) error {
	if err := s.record(run, nil); err != nil {
		return err
	}
	return s.cappedPostgres.Save(ctx, run)
}

func (s *recordingPostgres) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	if err := s.record(run, append([]state.Item{}, items...)); err != nil {
		return err
	}
	return s.cappedPostgres.SaveAppend(ctx, run, sessionID, items)
}
