package postgres

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/turnkit/turnkit/session"
)

var (
	_ session.Lister = (*Store)(nil)
	_ session.Pager  = (*Store)(nil)
)

// ListSessions returns a page of the sessions, newest first by their
// first append, or those whose ID starts with q.Prefix in byte order (see
// [session.Lister]): one statement on the table session_index, which the
// appends and clears keep in their transactions, reading one of its
// indexes from the cursor.
func (s *Store) ListSessions(ctx context.Context, q session.SessionQuery) (session.SessionPage, error) {
	if err := s.gate.Begin(ctx, "list sessions", q.Prefix); err != nil {
		return session.SessionPage{}, err
	}
	n := q.PageSize()
	query, args := s.q.listSessions, []any(nil)
	if q.Prefix == "" {
		before, err := q.NewestBefore()
		if err != nil {
			return session.SessionPage{}, err
		}
		args = []any{before, int64(n + 1)}
	} else {
		after, err := q.After()
		if err != nil {
			return session.SessionPage{}, err
		}
		query, args = s.q.searchSessions, []any{after, q.Prefix, q.Prefix + "\U0010FFFF", int64(n + 1)}
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return session.SessionPage{}, s.gate.Wrap(ctx, "list sessions", q.Prefix, err)
	}
	var (
		page    session.SessionPage
		serials []int64
		serial  int64
		id      string
	)
	_, err = pgx.ForEachRow(rows, []any{&serial, &id}, func() error {
		if strings.HasPrefix(id, q.Prefix) {
			page.IDs, serials = append(page.IDs, id), append(serials, serial)
		}
		return nil
	})
	if err != nil {
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
	rows, err := s.pool.Query(ctx, s.q.page, sessionID, place, seq, int64(n+1))
	if err != nil {
		return session.ItemPage{}, s.gate.Wrap(ctx, "page", sessionID, err)
	}
	var (
		page       session.ItemPage
		runID      *string
		pl, sq     int64
		kind, name string
		raw        []byte
	)
	rd := s.reader(ctx, sessionID, "")
	_, err = pgx.ForEachRow(rows, []any{&runID, &pl, &sq, &kind, &name, &raw}, func() error {
		it, err := rd.Decode(kind, sq, name, raw)
		if err != nil {
			return err
		}
		e := session.Entry{Place: pl, Item: it}
		if runID != nil {
			e.RunID = *runID
		}
		page.Entries = append(page.Entries, e)
		raw = nil
		return nil
	})
	if err != nil {
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
