package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

// indexCols are the columns a listing reads from listed, in the order
// ListRuns scans them.
const indexCols = `i.serial, i.run_id, i.session_id, i.status, c.agent, c.turn, c.pending, c.version`

// listed is what a listing reads: each run's listing row (run_index, i),
// which it filters and orders by, and the rest of its summary from its
// head's row (run_checkpoints, c), by key (see the migration
// 0008_run_summary.sql). Every save and delete writes both in one
// statement, so every listing row has its head.
const listed = `{{schema}}.run_index AS i JOIN {{schema}}.run_checkpoints AS c ON c.run_id = i.run_id`

// ListRuns returns a page of the stored runs, newest first by their first
// save, filtered by q's status and session (see [state.Lister]). Each
// save and delete keeps the listing's table, run_index, in its own
// statement, and a page is one statement reading one of its indexes
// backwards from the cursor, and each listed run's head by key: it costs
// O(the page), whatever the number of checkpoints. A cursor that no listing returned fails with a
// [*state.CursorError].
func (s *Store) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	if err := s.gate.BeginRun(ctx, "list", ""); err != nil {
		return state.RunPage{}, err
	}
	before, err := q.Before()
	if err != nil {
		return state.RunPage{}, err
	}
	n := q.PageSize()
	sql, args := s.ck.listAll, []any{before, int64(n + 1)}
	switch {
	case q.SessionID == "" && q.Status != 0:
		sql, args = s.ck.listStatus, append(args, int16(q.Status))
	case q.Status == 0 && q.SessionID != "":
		sql, args = s.ck.listSession, append(args, q.SessionID)
	case q.Status != 0:
		sql, args = s.ck.listSessionStatus, append(args, int16(q.Status), q.SessionID)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return state.RunPage{}, s.gate.WrapRun(ctx, "list", "", err)
	}
	sums := make([]state.RunSummary, 0, n+1)
	serials := make([]int64, 0, n+1)
	var (
		sum           state.RunSummary
		serial        int64
		status        int16
		turn, pending int64
	)
	_, err = pgx.ForEachRow(rows, []any{&serial, &sum.RunID, &sum.SessionID, &status, &sum.Agent, &turn, &pending, &sum.Version}, func() error {
		sum.Status, sum.Turn, sum.Pending = state.RunStatus(status), int(turn), int(pending)
		sums, serials = append(sums, sum), append(serials, serial)
		return nil
	})
	if err != nil {
		return state.RunPage{}, s.gate.WrapRun(ctx, "list", "", err)
	}
	return rowcodec.Page(sums, serials, n), nil
}
