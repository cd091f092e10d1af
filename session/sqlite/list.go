package sqlite

import (
	"context"
	"database/sql"

	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

// ListRuns returns a page of the stored runs, newest first by their first
// save, filtered by q's status and session (see [state.Lister]). Each
// save and delete keeps the listing's table, run_index, in its own
// transaction (the head's triggers write the run's row when a new head
// is inserted or its session or status changes; the rest of its summary
// is in the head's row, which every save writes), and a page is one statement reading one of its
// indexes backwards from the cursor, each run's head by key: it costs
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
	var st *sql.Stmt
	switch {
	case q.SessionID == "" && q.Status == 0:
		st = s.ck.listAll
	case q.SessionID == "":
		st = s.ck.listStatus
	case q.Status == 0:
		st = s.ck.listSession
	default:
		st = s.ck.listSessionStatus
	}
	n := q.PageSize()
	rows, err := st.QueryContext(ctx, before, n+1, int(q.Status), q.SessionID)
	if err != nil {
		return state.RunPage{}, s.gate.WrapRun(ctx, "list", "", err)
	}
	defer rows.Close()
	sums := make([]state.RunSummary, 0, n+1)
	serials := make([]int64, 0, n+1)
	for rows.Next() {
		var (
			sum    state.RunSummary
			serial int64
			status int
		)
		if err := rows.Scan(&serial, &sum.RunID, &sum.SessionID, &status, &sum.Agent, &sum.Turn, &sum.Pending, &sum.Version); err != nil {
			return state.RunPage{}, s.gate.WrapRun(ctx, "list", "", err)
		}
		sum.Status = state.RunStatus(status)
		sums, serials = append(sums, sum), append(serials, serial)
	}
	if err := rows.Err(); err != nil {
		return state.RunPage{}, s.gate.WrapRun(ctx, "list", "", err)
	}
	return rowcodec.Page(sums, serials, n), nil
}
