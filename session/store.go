package session

import (
	"context"
	"errors"

	"github.com/turnkit/turnkit/state"
)

// Errors returned by Store implementations.
var (
	// ErrClosed means the store was used after Close.
	ErrClosed = errors.New("session: store closed")
	// ErrConflict means an append at a stored (run ID, Seq) carried a
	// different item than the one stored: not a retry, a bug.
	ErrConflict = errors.New("session: conflicting item at a stored position")
	// ErrInvalid means the arguments cannot be stored: an empty session or
	// run ID, or an item without a position.
	ErrInvalid = errors.New("session: invalid append")
	// ErrDuplicateOutput means an append carried a second output for a
	// call that already has one stored at another position. The Responses
	// API refuses history in which a call has two outputs.
	ErrDuplicateOutput = errors.New("session: second output for one call")
	// ErrCorrupt means a stored item cannot be read back: its stored form
	// is not one an append writes (an unknown kind, JSON that is not an
	// item of its kind, a position below 1).
	ErrCorrupt = errors.New("session: corrupt stored item")
)

// A HistoryQuery selects what [Store.ListBefore] reads.
type HistoryQuery struct {
	// Limit > 0 keeps only the last Limit items.
	Limit int
	// Stamp > 0 keeps only the items written before that stamp: the
	// Stamp of an earlier [History] reads the items it read, less those
	// removed since, whatever was written after it. 0 keeps every item.
	Stamp int64
}

// A History is what [Store.ListBefore] read: the items, in order, and the
// session's write stamp when it read them.
//
// Every append gives the items it stores the session's next write stamp:
// a per-session counter that only goes up (Pop and Clear do not lower it;
// items stored by an earlier version of a store count as written before
// every stamp). Stamp is the stamp the session's next write will get, at
// least 1, so that a [HistoryQuery] with this Stamp reads exactly the items
// of this history that are still stored, even after an earlier run of the
// session wrote more items before the run's place. A run's history
// reference records it ([state.Run.HistoryRef]).
type History struct {
	Items []state.Item
	Stamp int64
}

// A Store persists the items of sessions.
//
// Append stores the items of one run atomically: all or none. It is
// idempotent on (runID, Seq): an item already stored at that position is
// skipped, so a retried or resumed append never duplicates. Each call has
// at most one output: an output (of any output kind) answers the latest
// call of the run with its call ID placed before it, so a call ID a model
// reuses in a later response is another call, and an append that gives a
// call a second output, at another position, fails whole with
// ErrDuplicateOutput. A call is stored with or before its outputs, never
// after them; the check costs O(the appended items). List returns a
// session's items ordered by (the run's place in the session, Seq), where a
// run's place is fixed at its first append. Items returned are new values;
// they alias nothing in the store.
//
// Implementations must be safe for concurrent use by multiple goroutines
// and processes (for the shared backends), must honour ctx, and return
// ErrClosed after Close.
type Store interface {
	// List returns the session's items in order; limit > 0 returns only the
	// last limit items (still in order). An unknown session has no items.
	List(ctx context.Context, sessionID string, limit int) ([]state.Item, error)
	// ListBefore returns, in order, the session's items placed before the
	// items of run runID: the history that run started from. q.Limit > 0
	// returns only the last Limit of them; q.Stamp > 0 only the items
	// written before that stamp (see [History]). A run with nothing stored
	// yet is placed after every run, so ListBefore then returns what List
	// does. It reads one consistent snapshot and returns, with the items,
	// the session's stamp at that snapshot. Served from the store's index
	// on (session, place, Seq), it costs O(the items returned, and the
	// items skipped for their stamp), whatever the session's length: a
	// checkpoint that refers to its run's history
	// ([state.Run.HistoryRef]) reads it back with it.
	ListBefore(ctx context.Context, sessionID, runID string, q HistoryQuery) (History, error)
	// Append stores items of run runID, each at its Seq (which must be > 0).
	// It keeps no reference to the items slice once it returns (items are
	// values: a store keeps copies), as io.Writer keeps none to p: the
	// caller may reuse it for its next append.
	Append(ctx context.Context, sessionID, runID string, items []state.Item) error
	// Lookup returns the item stored at (runID, seq), if any. Resume uses it
	// to learn whether a call's output was committed before a crash.
	Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error)
	// Pop removes and returns the session's last item, if any.
	Pop(ctx context.Context, sessionID string) (state.Item, bool, error)
	// Clear removes every item of the session.
	Clear(ctx context.Context, sessionID string) error
	// Close releases the store's resources.
	Close() error
}
