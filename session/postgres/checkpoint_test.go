package postgres_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

func rawExec(t *testing.T, pool *pgxpool.Pool, q string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// backend is the store in a fresh schema for package ckpttest.
func backend(t *testing.T) ckpttest.Backend {
	schema, pool := testSchema(t)
	if _, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	heads := pgx.Identifier{schema, "run_checkpoints"}.Sanitize()
	items := pgx.Identifier{schema, "run_checkpoint_items"}.Sanitize()
	return ckpttest.Backend{
		New: func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) ckpttest.Store {
			s, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema), postgres.WithCodec(m, u))
			if err != nil {
				t.Fatalf("New = %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		PutHead: func(t *testing.T, runID string, version int64, data, context []byte) {
			rawExec(t, pool, `INSERT INTO `+heads+` (run_id, version, data, context) VALUES ($1, $2, $3, $4)
				ON CONFLICT (run_id) DO UPDATE SET version = $2, data = $3, context = $4`, runID, version, data, context)
		},
		Items: func(t *testing.T, runID string) []state.Piece {
			rows, err := pool.Query(t.Context(), `SELECT seq, version, data FROM `+items+` WHERE run_id = $1 ORDER BY seq`, runID)
			if err != nil {
				t.Fatal(err)
			}
			out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (state.Piece, error) {
				var p state.Piece
				err := r.Scan(&p.Seq, &p.Version, &p.Data)
				return p, err
			})
			if err != nil {
				t.Fatal(err)
			}
			return out
		},
		PutItem: func(t *testing.T, runID string, p state.Piece) {
			rawExec(t, pool, `INSERT INTO `+items+` (run_id, seq, version, data) VALUES ($1, $2, $3, $4)
				ON CONFLICT (run_id, seq) DO UPDATE SET version = $3, data = $4`, runID, p.Seq, p.Version, p.Data)
		},
		DeleteItem: func(t *testing.T, runID string, seq int64) {
			rawExec(t, pool, `DELETE FROM `+items+` WHERE run_id = $1 AND seq = $2`, runID, seq)
		},
		SetContext: func(t *testing.T, runID string, context []byte) {
			rawExec(t, pool, `UPDATE `+heads+` SET context = $2 WHERE run_id = $1`, runID, context)
		},
		Written: func(t *testing.T, runID string, save func()) (int, int64) {
			save()
			return written(t, pool, schema, runID)
		},
	}
}

// written returns the item rows and the bytes the last save of runID
// wrote: the rows its transaction wrote (their xmin) in the checkpoint
// tables and in their TOAST tables, where a context that did not change is
// not written again. A value inside its row counts with its row; a value
// past the TOAST threshold (about 2 kB) counts by the chunks the save
// wrote of it.
func written(t testing.TB, pool *pgxpool.Pool, schema, runID string) (int, int64) {
	t.Helper()
	heads := pgx.Identifier{schema, "run_checkpoints"}.Sanitize()
	items := pgx.Identifier{schema, "run_checkpoint_items"}.Sanitize()
	var headToast, itemToast string
	if err := pool.QueryRow(t.Context(), `SELECT (SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = $1::regclass),
		(SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = $2::regclass)`, heads, items).Scan(&headToast, &itemToast); err != nil {
		t.Fatal(err)
	}
	var (
		rows  int
		bytes int64
	)
	inline := func(size string) string { return "CASE WHEN " + size + " > 2000 THEN 0 ELSE " + size + " END" }
	q := `WITH h AS (SELECT xmin AS x, ` + inline("pg_column_size(data)") + ` + ` + inline("coalesce(pg_column_size(context), 0)") + ` AS n
			FROM ` + heads + ` WHERE run_id = $1),
		i AS (SELECT count(*) AS rows, coalesce(sum(` + inline("pg_column_size(data)") + `), 0) AS n
			FROM ` + items + `, h WHERE run_id = $1 AND xmin = h.x),
		tt AS (SELECT coalesce(sum(length(chunk_data)), 0) AS n FROM ` + headToast + `, h WHERE xmin = h.x),
		it AS (SELECT coalesce(sum(length(chunk_data)), 0) AS n FROM ` + itemToast + `, h WHERE xmin = h.x)
		SELECT i.rows, h.n + i.n + tt.n + it.n FROM h, i, tt, it`
	err := pool.QueryRow(t.Context(), q, runID).Scan(&rows, &bytes)
	if err != nil {
		t.Fatal(err)
	}
	return rows, bytes
}

func TestCheckpointRows(t *testing.T) { ckpttest.Run(t, backend(t)) }

// TestCheckpointDeleteRemovesItems checks that Delete leaves no row of the
// run behind.
func TestCheckpointDeleteRemovesItems(t *testing.T) {
	schema, pool := testSchema(t)
	s, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	r := ckpttest.LongRun(t, "run-delete", 6)
	if err := s.Save(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	ckpttest.Turn(t, r, 10)
	if err := s.Save(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), r.ID()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM `+pgx.Identifier{schema, "run_checkpoint_items"}.Sanitize()+`) +
		(SELECT count(*) FROM `+pgx.Identifier{schema, "run_checkpoints"}.Sanitize()+`)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after Delete = %d, %v; want 0", n, err)
	}
	if _, err := s.Load(t.Context(), r.ID()); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Load after Delete = %v, want ErrNotFound", err)
	}
}
