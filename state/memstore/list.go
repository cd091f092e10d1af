package memstore

import (
	"context"
	"slices"

	"github.com/turnkit/turnkit/state"
)

// A listKey names one list of the index: the runs of a session ("": of
// every session) with a status (0: every status).
type listKey struct {
	session string
	status  state.RunStatus
}

// keysOf returns the lists a run with summary sum belongs to.
func keysOf(sum state.RunSummary) []listKey {
	keys := []listKey{{}, {status: sum.Status}}
	if sum.SessionID != "" {
		keys = append(keys, listKey{session: sum.SessionID}, listKey{session: sum.SessionID, status: sum.Status})
	}
	return keys
}

// index files e under sum, numbering it if it is new. s.mu is held.
func (s *Store) index(e *entry, sum state.RunSummary) {
	if e.serial == 0 {
		s.serial++
		e.serial = s.serial
		s.bySerial[e.serial] = sum.RunID
	} else if e.summary.Status == sum.Status && e.summary.SessionID == sum.SessionID {
		e.summary = sum
		return
	} else {
		s.unlist(e)
	}
	e.summary = sum
	for _, k := range keysOf(sum) {
		l := s.lists[k]
		i, _ := slices.BinarySearch(l, e.serial)
		s.lists[k] = slices.Insert(l, i, e.serial)
	}
}

// unindex removes e from the index. s.mu is held.
func (s *Store) unindex(e *entry) {
	s.unlist(e)
	delete(s.bySerial, e.serial)
}

// unlist removes e from the lists it is in. s.mu is held.
func (s *Store) unlist(e *entry) {
	for _, k := range keysOf(e.summary) {
		l := s.lists[k]
		if i, ok := slices.BinarySearch(l, e.serial); ok {
			l = slices.Delete(l, i, i+1)
		}
		if len(l) == 0 {
			delete(s.lists, k)
		} else {
			s.lists[k] = l
		}
	}
}

// ListRuns returns a page of the stored runs, newest first, from the
// store's index: a binary search in the list the query names, then the
// page's runs. See [state.Lister].
func (s *Store) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	if err := ctx.Err(); err != nil {
		return state.RunPage{}, err
	}
	before, err := q.Before()
	if err != nil {
		return state.RunPage{}, err
	}
	n := q.PageSize()
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lists[listKey{session: q.SessionID, status: q.Status}]
	end, _ := slices.BinarySearch(l, before)
	var page state.RunPage
	for i := end - 1; i >= 0 && len(page.Runs) < n; i-- {
		page.Runs = append(page.Runs, s.runs[s.bySerial[l[i]]].summary)
	}
	if len(page.Runs) == n && end-n > 0 {
		page.Next = state.RunCursor(l[end-n])
	}
	return page, nil
}
