package state

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A RunStatus is what a run waits for, as a [Lister] files it. The zero
// RunStatus, in a [RunQuery], means every status.
type RunStatus uint8

// The statuses of a stored run. They are exclusive: a run is in exactly
// one of them at each save.
const (
	// RunPaused: the run waits for human decisions on its pending
	// approvals ([Run.Pending]), decided or not, until a resume runs them.
	RunPaused RunStatus = iota + 1
	// RunUnfinished: the run has not finished and waits for no approval:
	// it is going on, or it stopped on an error, a cancellation or a
	// crash, and can be resumed.
	RunUnfinished
	// RunFinished: the run has its final output ([Run.FinalOutput]).
	RunFinished
)

// String returns "paused", "unfinished" or "finished".
func (s RunStatus) String() string {
	switch s {
	case RunPaused:
		return "paused"
	case RunUnfinished:
		return "unfinished"
	case RunFinished:
		return "finished"
	}
	return "RunStatus(" + strconv.Itoa(int(s)) + ")"
}

// ParseRunStatus returns the status named by s ("paused", "unfinished",
// "finished"), or 0 and false.
func ParseRunStatus(s string) (RunStatus, bool) {
	for _, st := range [...]RunStatus{RunPaused, RunUnfinished, RunFinished} {
		if st.String() == s {
			return st, true
		}
	}
	return 0, false
}

// Status returns the run's status: finished once it has its final output,
// else paused while approvals are pending, else unfinished.
func (r *Run) Status() RunStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusLocked()
}

func (r *Run) statusLocked() RunStatus {
	switch {
	case r.finished:
		return RunFinished
	case len(r.pending) > 0:
		return RunPaused
	}
	return RunUnfinished
}

// A RunSummary is what a listing says of a stored run, as of its last
// save: enough to choose a run to [Store.Load].
type RunSummary struct {
	RunID     string
	SessionID string // "" when the run has no session
	Agent     string // the current agent
	Turn      int
	Status    RunStatus
	Pending   int   // approvals pending
	Version   int64 // the stored version
}

// summaryLocked is the run's summary for the save of version v.
func (r *Run) summaryLocked(v int64) RunSummary {
	return RunSummary{
		RunID: r.id, SessionID: r.sessionID, Agent: r.agent, Turn: r.turn,
		Status: r.statusLocked(), Pending: len(r.pending), Version: v,
	}
}

// Limits of a page of runs.
const (
	// DefaultRunLimit is the size of a page when a [RunQuery] gives none.
	DefaultRunLimit = 50
	// MaxRunLimit is the largest page a [Lister] returns.
	MaxRunLimit = 1000
)

// A RunQuery selects a page of stored runs. The zero RunQuery is the
// first page of every run.
type RunQuery struct {
	Status    RunStatus // 0: every status
	SessionID string    // "": every session
	// Cursor continues a listing: the Next of the page before, with the
	// same Status and SessionID; "" starts at the newest run.
	Cursor string
	// Limit is the largest number of runs on the page: <= 0 means
	// [DefaultRunLimit]; more than [MaxRunLimit] means MaxRunLimit.
	Limit int
}

// PageSize returns the number of runs the query asks for, Limit within
// its bounds.
func (q RunQuery) PageSize() int {
	switch {
	case q.Limit <= 0:
		return DefaultRunLimit
	case q.Limit > MaxRunLimit:
		return MaxRunLimit
	}
	return q.Limit
}

// Before returns the position the page starts below: the runs listed are
// those first saved before it, newest first. It is [math.MaxInt64] for
// the first page; a cursor that no [Lister] returned fails with a
// [*CursorError] wrapping [ErrCursor].
func (q RunQuery) Before() (int64, error) {
	if q.Cursor == "" {
		return math.MaxInt64, nil
	}
	rest, ok := strings.CutPrefix(q.Cursor, cursorPrefix)
	n, err := strconv.ParseInt(rest, 36, 64)
	if !ok || err != nil || n <= 0 || RunCursor(n) != q.Cursor {
		return 0, &CursorError{Cursor: q.Cursor}
	}
	return n, nil
}

// cursorPrefix starts every cursor, so that a cursor of another listing
// (a session's items, say) is refused rather than misread.
const cursorPrefix = "r"

// RunCursor returns the cursor of the page after the run a [Lister]
// numbered serial: the runs first saved before it. Stores number each
// run once, when it is first saved, in save order (1, 2, …), and keep the
// number across its saves; a [Lister] sets [RunPage.Next] to RunCursor of
// the last run on a page that more runs follow.
func RunCursor(serial int64) string {
	return cursorPrefix + strconv.FormatInt(serial, 36)
}

// A RunPage is one page of a listing: runs newest first (by their first
// save), and Next, the cursor of the page after it, or "" when no run
// followed the page when it was read.
type RunPage struct {
	Runs []RunSummary
	Next string
}

// A Lister lists the runs a [Store] keeps: a page at a time, newest
// first by their first save, filtered by status and session, from an
// index the store keeps up to date in the same atomic step as each save
// (and delete), so that a page costs O(its runs), whatever the number of
// checkpoints stored. Every Store of this module implements it; a Store
// need not, and callers check with a type assertion:
//
//	if l, ok := store.(state.Lister); ok {
//		page, err := l.ListRuns(ctx, state.RunQuery{Status: state.RunPaused})
//		…
//	}
//
// It is an interface of its own, not a method of Store, so that the
// stores and wrappers written against Store stay stores.
//
// The summaries are those of each run's last save. A listing is a series
// of reads, not one snapshot: a run saved for the first time or whose
// status changes while a listing goes on may be left out of it or listed
// twice. ListRuns returns a [*CursorError] for a cursor that no listing
// returned, and must be safe for concurrent use and honour ctx.
type Lister interface {
	ListRuns(ctx context.Context, q RunQuery) (RunPage, error)
}

// ErrCursor means a listing's cursor is not one a listing returned. It is
// wrapped by [*CursorError].
var ErrCursor = errors.New("state: invalid listing cursor")

// A CursorError reports a [RunQuery] whose Cursor no [Lister] returned.
type CursorError struct {
	Cursor string
}

// Error says what failed, where, and why.
func (e *CursorError) Error() string {
	return fmt.Sprintf("state: list runs: cursor %q is not one a listing returned", e.Cursor)
}

// Unwrap returns [ErrCursor].
func (e *CursorError) Unwrap() error { return ErrCursor }
