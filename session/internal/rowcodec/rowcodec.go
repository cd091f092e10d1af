// Package rowcodec holds what the database-backed session stores share: the
// validation of an append, the stored form of an item (kind name, Seq, tool
// name, canonical JSON) and its rebuilding, and the translation of errors
// at the edge into session sentinels.
package rowcodec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// Validate checks the arguments of an append. pkg prefixes the error.
func Validate(pkg, sessionID, runID string, items []state.Item) error {
	if sessionID == "" || runID == "" {
		return fmt.Errorf("%s: append to session %q run %q: empty ID: %w", pkg, sessionID, runID, session.ErrInvalid)
	}
	for i, it := range items {
		if it.IsZero() || !it.Kind().Valid() || it.Seq() < 1 {
			return fmt.Errorf("%s: append to session %q run %q: item %d (%s): %w", pkg, sessionID, runID, i, it, session.ErrInvalid)
		}
	}
	return nil
}

// Decode rebuilds a stored item. A stored form that no append writes
// (see [Validate]) fails with an error wrapping [session.ErrCorrupt].
func Decode(kind string, seq int64, name string, raw []byte) (state.Item, error) {
	if seq < 1 {
		return state.Item{}, fmt.Errorf("%w: position %d", session.ErrCorrupt, seq)
	}
	k, err := state.ParseKind(kind)
	if err != nil {
		return state.Item{}, fmt.Errorf("%w: %w", session.ErrCorrupt, err)
	}
	it, err := state.ParseItem(k, raw)
	if err != nil {
		return state.Item{}, fmt.Errorf("%w: %w", session.ErrCorrupt, err)
	}
	return it.WithSeq(seq).WithName(name), nil
}

// Same reports whether it is the item stored as (kind, name, raw).
func Same(it state.Item, kind, name string, raw []byte) bool {
	return it.Kind().String() == kind && it.Name() == name && it.RawLen() == len(raw) && string(it.AppendRaw(nil)) == string(raw)
}

// Conflict returns the error for an append of it where another item is
// stored; it wraps [session.ErrConflict].
func Conflict(pkg, sessionID, runID string, it state.Item, storedKind string) error {
	return fmt.Errorf("%s: append %s to session %q run %q: a different %s is stored there: %w",
		pkg, it, sessionID, runID, storedKind, session.ErrConflict)
}

// Wrap translates an error of operation op at the edge: after Close it
// wraps [session.ErrClosed]; when ctx is done it wraps ctx's error (the
// drivers report an interrupted statement in their own words); otherwise it
// wraps err. The result is prefixed with pkg and says what failed where.
func Wrap(ctx context.Context, pkg, op, sessionID string, closed bool, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, session.ErrConflict), errors.Is(err, session.ErrInvalid), errors.Is(err, session.ErrDuplicateOutput):
		return err // already said what and where
	case closed:
		return fmt.Errorf("%s: %s session %q: %w", pkg, op, sessionID, session.ErrClosed)
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		return fmt.Errorf("%s: %s session %q: %w (%v)", pkg, op, sessionID, ctx.Err(), err)
	default:
		return fmt.Errorf("%s: %s session %q: %w", pkg, op, sessionID, err)
	}
}

// A Scanner is a database row: *sql.Row, *sql.Rows, pgx.Row.
type Scanner interface{ Scan(dest ...any) error }

// ScanItem reads a row of (seq, kind, name, raw) and rebuilds its item.
func ScanItem(r Scanner) (state.Item, error) { return ScanItemStamp(r, nil) }

// ScanItemStamp is [ScanItem] for a row with one more column, an integer
// scanned into stamp; a nil stamp scans the four columns alone.
func ScanItemStamp(r Scanner, stamp *int64) (state.Item, error) {
	var rd Reader
	return rd.ScanItemStamp(r, stamp)
}

// Rows is a result set: *sql.Rows, pgx.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanHistory reads what a store's ListBefore statement returns, rows of
// (seq, kind, name, raw, the session's last stamp), into a History whose
// Stamp is the one after that last stamp. The caller closes rows.
func ScanHistory(rows Rows) (session.History, error) {
	var rd Reader
	return rd.ScanHistory(rows)
}

// ScanChanges reads what a store's change statement returns: a head row
// with an empty kind, whose last three columns are the session's last
// stamp, its generation and the run's place, and rows of (place, seq,
// kind, name, raw, 0, 0, 0), in any order. The items come back ordered
// by (place, seq); rows read last first are reversed, not sorted.
func ScanChanges(rows Rows) (session.Changes, error) {
	var rd Reader
	return rd.ScanChanges(rows)
}

// ScanChanges is [ScanChanges] through r.
func (r *Reader) ScanChanges(rows Rows) (session.Changes, error) {
	var (
		ch         session.Changes
		place, seq int64
		kind, name string
		raw        []byte
		a, b, c    int64
	)
	for rows.Next() {
		raw = nil // a driver may scan into the slice it is given
		if err := rows.Scan(&place, &seq, &kind, &name, &raw, &a, &b, &c); err != nil {
			return session.Changes{}, err
		}
		if kind == "" {
			ch.Stamp, ch.Generation, ch.RunPlace = a+1, b, c
			continue
		}
		it, err := r.Decode(kind, seq, name, raw)
		if err != nil {
			return session.Changes{}, fmt.Errorf("decode item at place %d seq %d: %w", place, seq, err)
		}
		ch.Items = append(ch.Items, session.Placed{Place: place, Item: it})
	}
	if err := rows.Err(); err != nil {
		return session.Changes{}, err
	}
	if ch.Stamp == 0 {
		return session.Changes{}, fmt.Errorf("%w: a change read without its head row", session.ErrCorrupt)
	}
	SortPlaced(ch.Items)
	return ch, nil
}

// SortPlaced orders items by (place, seq): in O(n) when they are in that
// order or its reverse.
func SortPlaced(items []session.Placed) {
	less := func(a, b session.Placed) int {
		if c := cmp.Compare(a.Place, b.Place); c != 0 {
			return c
		}
		return cmp.Compare(a.Item.Seq(), b.Item.Seq())
	}
	if slices.IsSortedFunc(items, less) {
		return
	}
	slices.Reverse(items)
	if !slices.IsSortedFunc(items, less) {
		slices.SortFunc(items, less)
	}
}
