package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/state"
)

// Limits of a page of sessions or items.
const (
	// DefaultPageLimit is the size of a page when a query gives none.
	DefaultPageLimit = 50
	// MaxPageLimit is the largest page a [Lister] or [Pager] returns.
	MaxPageLimit = 1000
)

// pageSize returns limit within its bounds.
func pageSize(limit int) int {
	switch {
	case limit <= 0:
		return DefaultPageLimit
	case limit > MaxPageLimit:
		return MaxPageLimit
	}
	return limit
}

// A Lister lists the sessions a [Store] keeps, a page at a time, from an
// index the store keeps with its appends, so that a page costs O(its
// sessions) whatever the number of sessions stored. It is an interface of
// its own, not a method of Store, so that Stores written before it (and
// wrappers) stay Stores; callers check with a type assertion. The memory,
// SQLite, PostgreSQL and Redis stores implement it.
//
// A session is listed from its first append until it is cleared. A
// listing is a series of reads, not one snapshot: a session created or
// cleared while it goes on may be left out or listed twice. ListSessions
// fails with an error wrapping [ErrCursor] for a cursor that no listing
// returned, and must be safe for concurrent use and honour ctx.
type Lister interface {
	ListSessions(ctx context.Context, q SessionQuery) (SessionPage, error)
}

// A SessionQuery selects a page of sessions. The zero SessionQuery is the
// first page of every session, newest first.
type SessionQuery struct {
	// Prefix, when not "", lists only the sessions whose ID starts with
	// it, in ID order rather than newest first: a search by ID.
	Prefix string
	// Cursor continues a listing: the Next of the page before, with the
	// same Prefix; "" starts at the first.
	Cursor string
	// Limit is the largest number of sessions on the page: <= 0 means
	// [DefaultPageLimit]; more than [MaxPageLimit] means MaxPageLimit.
	Limit int
}

// PageSize returns the number of sessions the query asks for.
func (q SessionQuery) PageSize() int { return pageSize(q.Limit) }

// A SessionPage is one page of sessions, and Next, the cursor of the page
// after it, or "" when no session followed the page when it was read.
type SessionPage struct {
	IDs  []string
	Next string
}

// NewestBefore returns the serial the page of a listing without a Prefix
// starts below (stores number each session at its first append, 1, 2,
// …): [math.MaxInt64] for the first page.
func (q SessionQuery) NewestBefore() (int64, error) {
	if q.Cursor == "" {
		return math.MaxInt64, nil
	}
	rest, ok := strings.CutPrefix(q.Cursor, "n")
	n, err := strconv.ParseInt(rest, 36, 64)
	if !ok || err != nil || n <= 0 || NewestCursor(n) != q.Cursor || q.Prefix != "" {
		return 0, &CursorError{Cursor: q.Cursor}
	}
	return n, nil
}

// After returns the session ID the page of a search by Prefix starts
// after: "" for the first page.
func (q SessionQuery) After() (string, error) {
	if q.Cursor == "" {
		return "", nil
	}
	id, ok := strings.CutPrefix(q.Cursor, "i")
	if !ok || !strings.HasPrefix(id, q.Prefix) || q.Prefix == "" {
		return "", &CursorError{Cursor: q.Cursor}
	}
	return id, nil
}

// NewestCursor returns the cursor of the page after the session a store
// numbered serial, in a listing without a Prefix.
func NewestCursor(serial int64) string { return "n" + strconv.FormatInt(serial, 36) }

// AfterCursor returns the cursor of the page after the session id, in a
// search by Prefix.
func AfterCursor(id string) string { return "i" + id }

// A Pager reads a session's items a page at a time, from the newest back,
// from the store's index on (session, run place, Seq), so that a page
// costs O(its items) whatever the session's length. It is an interface of
// its own, as [Lister] is; the memory, SQLite, PostgreSQL and Redis
// stores implement it.
// ListPage fails with an error wrapping [ErrCursor] for a cursor that no
// page returned, and must be safe for concurrent use and honour ctx.
type Pager interface {
	ListPage(ctx context.Context, sessionID string, q PageQuery) (ItemPage, error)
}

// A PageQuery selects a page of a session's items. The zero PageQuery is
// the session's last [DefaultPageLimit] items.
type PageQuery struct {
	// Cursor continues backwards: the Next of the page after; "" starts
	// at the session's last item.
	Cursor string
	// Limit is the largest number of items on the page: <= 0 means
	// [DefaultPageLimit]; more than [MaxPageLimit] means MaxPageLimit.
	Limit int
}

// PageSize returns the number of items the query asks for.
func (q PageQuery) PageSize() int { return pageSize(q.Limit) }

// Before returns the position (the run's place, Seq) the page ends
// before: (math.MaxInt64, math.MaxInt64) for the last page.
func (q PageQuery) Before() (place, seq int64, err error) {
	if q.Cursor == "" {
		return math.MaxInt64, math.MaxInt64, nil
	}
	rest, ok := strings.CutPrefix(q.Cursor, "p")
	a, b, ok2 := strings.Cut(rest, ".")
	place, err1 := strconv.ParseInt(a, 36, 64)
	seq, err2 := strconv.ParseInt(b, 36, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil || place <= 0 || seq <= 0 || PageCursor(place, seq) != q.Cursor {
		return 0, 0, &CursorError{Cursor: q.Cursor}
	}
	return place, seq, nil
}

// PageCursor returns the cursor of the page of the items before the one
// at (place, seq).
func PageCursor(place, seq int64) string {
	return "p" + strconv.FormatInt(place, 36) + "." + strconv.FormatInt(seq, 36)
}

// An Entry is an item of a session with the run that stored it and the
// run's place in the session.
type Entry struct {
	RunID string
	Place int64
	Item  state.Item
}

// An ItemPage is a page of a session's items, in order (oldest first),
// and Next, the cursor of the page of the items before them, or "" when
// none came before them when the page was read.
type ItemPage struct {
	Entries []Entry
	Next    string
}

// ErrCursor means a listing's or page's cursor is not one a listing or
// page returned. It is wrapped by [*CursorError].
var ErrCursor = errors.New("session: invalid cursor")

// A CursorError reports a cursor that no listing or page returned.
type CursorError struct {
	Cursor string
}

// Error says what failed, where, and why.
func (e *CursorError) Error() string {
	return fmt.Sprintf("session: cursor %q is not one a listing or page returned", e.Cursor)
}

// Unwrap returns [ErrCursor].
func (e *CursorError) Unwrap() error { return ErrCursor }
