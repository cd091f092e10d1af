package sqlite

import (
	"context"
	"slices"
	"strings"

	"github.com/turnkit/turnkit/session"
)

var (
	_ session.Lister = (*Store)(nil)
	_ session.Pager  = (*Store)(nil)
)

// ListSessions returns a page of the sessions, newest first by their
// first append, or those whose ID starts with q.Prefix in ID order (see
// [session.Lister]): one statement on the table session_index, which the
// appends and clears keep in their transactions, reading one of its
// indexes from the cursor.
func (s *Store) ListSessions(ctx context.Context, q session.SessionQuery) (session.SessionPage, error) {
	if err := s.gate.Begin(ctx, "list sessions", q.Prefix); err != nil {
		return session.SessionPage{}, err
	}
	n := q.PageSize()
	query, args := s.reads.listSessions, []any(nil)
	if q.Prefix == "" {
		before, err := q.NewestBefore()
		if err != nil {
			return session.SessionPage{}, err
		}
		args = []any{before, n + 1}
	} else {
		after, err := q.After()
		if err != nil {
			return session.SessionPage{}, err
		}
		query, args = s.reads.searchSessions, []any{after, q.Prefix, q.Prefix + "\xff", n + 1}
	}
	rows, err := query.QueryContext(ctx, args...)
	if err != nil {
		return session.SessionPage{}, s.gate.Wrap(ctx, "list sessions", q.Prefix, err)
	}
	defer rows.Close()
	var (
		page    session.SessionPage
		serials []int64
	)
	for rows.Next() {
		var (
			serial int64
			id     string
		)
		if err := rows.Scan(&serial, &id); err != nil {
			return session.SessionPage{}, s.gate.Wrap(ctx, "list sessions", q.Prefix, err)
		}
		if !strings.HasPrefix(id, q.Prefix) {
			break
		}
		page.IDs, serials = append(page.IDs, id), append(serials, serial)
	}
	if err := rows.Err(); err != nil {
		return session.SessionPage{}, s.gate.Wrap(ctx, "list sessions", q.Prefix, err)
	}
	if len(page.IDs) > n {
		page.IDs = page.IDs[:n]
		if q.Prefix == "" {
			page.Next = session.NewestCursor(serials[n-1])
		} else {
			page.Next = session.AfterCursor(page.IDs[n-1])
		}
	}
	return page, nil
}

// ListPage returns a page of the session's items before the cursor, with
// their runs (see [session.Pager]): one statement reading the items'
// primary key backwards from the cursor, O(the page) whatever the
// session's length.
func (s *Store) ListPage(ctx context.Context, sessionID string, q session.PageQuery) (session.ItemPage, error) {
	if err := s.gate.Begin(ctx, "page", sessionID); err != nil {
		return session.ItemPage{}, err
	}
	place, seq, err := q.Before()
	if err != nil {
		return session.ItemPage{}, err
	}
	n := q.PageSize()
	rows, err := s.reads.page.QueryContext(ctx, sessionID, place, seq, n+1)
	if err != nil {
		return session.ItemPage{}, s.gate.Wrap(ctx, "page", sessionID, err)
	}
	defer rows.Close()
	var page session.ItemPage
	rd := s.reader(ctx, sessionID, "")
	for rows.Next() {
		var (
			e          session.Entry
			seq        int64
			kind, name string
			raw        []byte
		)
		if err := rows.Scan(&e.RunID, &e.Place, &seq, &kind, &name, &raw); err != nil {
			return session.ItemPage{}, s.gate.Wrap(ctx, "page", sessionID, err)
		}
		rd.RunID = e.RunID
		if e.Item, err = rd.Decode(kind, seq, name, raw); err != nil {
			return session.ItemPage{}, s.gate.Wrap(ctx, "page", sessionID, err)
		}
		page.Entries = append(page.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return session.ItemPage{}, s.gate.Wrap(ctx, "page", sessionID, err)
	}
	if len(page.Entries) > n {
		page.Entries = page.Entries[:n]
		last := page.Entries[n-1]
		page.Next = session.PageCursor(last.Place, last.Item.Seq())
	}
	slices.Reverse(page.Entries)
	return page, nil
}
