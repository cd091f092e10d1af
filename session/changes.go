package session

import (
	"context"

	"github.com/turnkit/turnkit/state"
)

// A ChangeQuery selects what [ChangeReader.ReadChanges] reads.
type ChangeQuery struct {
	// Since > 0 reads every item of the session written at or after that
	// write stamp (the Stamp of an earlier [Changes] or [History]),
	// wherever it is placed. Since <= 0 reads the session's last Limit
	// items, or all of them for Limit <= 0.
	Since int64
	// Limit applies when Since <= 0 (see Since).
	Limit int
	// RunID, if not empty, names a run whose place [Changes] reports.
	RunID string
}

// A Placed item is a stored item with the place of its run in the
// session: a session orders its items by (Place, Seq).
type Placed struct {
	Place int64
	Item  state.Item
}

// Changes is what [ChangeReader.ReadChanges] read, from one consistent
// snapshot of the session.
type Changes struct {
	// Items are the items read, ordered by (Place, Seq).
	Items []Placed
	// Stamp is the stamp the session's next write will get, as
	// [History.Stamp]: a later read with Since = Stamp reads exactly what
	// was written after this one.
	Stamp int64
	// Generation counts the removals of the session's items (each Pop
	// that removed an item, each Clear); like the write stamp it only
	// goes up. Items written before Stamp are all still stored exactly
	// when a later read reports the same Generation.
	Generation int64
	// RunPlace is the place of the query's RunID, or 0 if that run has no
	// place yet (places start at 1).
	RunPlace int64
}

// A ChangeReader reads what a session gained since a write stamp, with the
// items' places, and a generation that tells whether any item was removed
// since: what a cache of decoded history ([Cache]) needs to stay exact
// with any number of processes writing the session. The backends
// session/memory, session/sqlite, session/postgres and session/redis
// implement it; a read with Since > 0 is served from an index on the
// items' write stamps and costs O(the items written since), whatever the
// session's length.
type ChangeReader interface {
	ReadChanges(ctx context.Context, sessionID string, q ChangeQuery) (Changes, error)
}
