package memory

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

// list numbers a new session and files it in the listing. s.mu is held.
func (s *Store) list(id string, sd *sessionData) {
	s.serial++
	sd.serial = s.serial
	s.newest = append(s.newest, sd.serial) // the greatest yet
	s.bySerial[sd.serial] = id
	i, _ := slices.BinarySearch(s.ids, id)
	s.ids = slices.Insert(s.ids, i, id)
}

// unlist removes a cleared session from the listing. s.mu is held.
func (s *Store) unlist(id string, sd *sessionData) {
	if i, ok := slices.BinarySearch(s.newest, sd.serial); ok {
		s.newest = slices.Delete(s.newest, i, i+1)
	}
	if i, ok := slices.BinarySearch(s.ids, id); ok {
		s.ids = slices.Delete(s.ids, i, i+1)
	}
	delete(s.bySerial, sd.serial)
}

// ListSessions returns a page of the sessions, newest first by their
// first append, or those whose ID starts with q.Prefix in ID order, by a
// binary search in the store's sorted index (see [session.Lister]).
func (s *Store) ListSessions(ctx context.Context, q session.SessionQuery) (session.SessionPage, error) {
	if err := ctx.Err(); err != nil {
		return session.SessionPage{}, err
	}
	n := q.PageSize()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.SessionPage{}, session.ErrClosed
	}
	var page session.SessionPage
	if q.Prefix == "" {
		before, err := q.NewestBefore()
		if err != nil {
			return page, err
		}
		end, _ := slices.BinarySearch(s.newest, before)
		for i := end - 1; i >= 0 && len(page.IDs) < n; i-- {
			page.IDs = append(page.IDs, s.bySerial[s.newest[i]])
		}
		if len(page.IDs) == n && end-n > 0 {
			page.Next = session.NewestCursor(s.newest[end-n])
		}
		return page, nil
	}
	after, err := q.After()
	if err != nil {
		return page, err
	}
	i, found := slices.BinarySearch(s.ids, max(after, q.Prefix))
	if found && after != "" {
		i++
	}
	for ; i < len(s.ids) && strings.HasPrefix(s.ids[i], q.Prefix); i++ {
		if len(page.IDs) == n {
			page.Next = session.AfterCursor(page.IDs[n-1])
			break
		}
		page.IDs = append(page.IDs, s.ids[i])
	}
	return page, nil
}

// ListPage returns a page of the session's items, those before the
// cursor, by a binary search in the session's sorted items (see
// [session.Pager]).
func (s *Store) ListPage(ctx context.Context, sessionID string, q session.PageQuery) (session.ItemPage, error) {
	if err := ctx.Err(); err != nil {
		return session.ItemPage{}, err
	}
	place, seq, err := q.Before()
	if err != nil {
		return session.ItemPage{}, err
	}
	n := q.PageSize()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.ItemPage{}, session.ErrClosed
	}
	sd := s.sessions[sessionID]
	if sd == nil {
		return session.ItemPage{}, nil
	}
	// Places are 0-based here and 1-based outside.
	end, _ := slices.BinarySearchFunc(sd.entries, [2]int64{place - 1, seq}, func(e entry, k [2]int64) int {
		if c := int64(e.place) - k[0]; c != 0 {
			return int(max(-1, min(1, c)))
		}
		return int(max(-1, min(1, e.item.Seq()-k[1])))
	})
	from := max(0, end-n)
	var page session.ItemPage
	for _, e := range sd.entries[from:end] {
		page.Entries = append(page.Entries, session.Entry{RunID: sd.runs[e.place], Place: int64(e.place) + 1, Item: e.item})
	}
	if from > 0 {
		first := sd.entries[from]
		page.Next = session.PageCursor(int64(first.place)+1, first.item.Seq())
	}
	return page, nil
}
