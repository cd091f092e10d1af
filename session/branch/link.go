package branch

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// Errors of a linked fork.
var (
	// ErrParentChanged means a fork's shared items are no longer what
	// they were when it forked: its parent was cleared, erased, or lost
	// items before the fork's position (a Pop below it, a retention).
	// The fork's own items are kept; Clear the fork to drop it.
	ErrParentChanged = errors.New("branch: the fork's parent changed below the fork's position")
	// ErrShared means a Pop on a fork reached the items it shares with
	// its parent, which the fork cannot remove. Fork the fork again at a
	// lower position (one record) to drop shared items.
	ErrShared = errors.New("branch: the item is shared with the fork's parent")
)

// Names a link record is stored under, in the fork's session.
const (
	// linkRun is the run ID of a fork's link record: its first append,
	// so placed before every run of the fork.
	linkRun = "turnkit.branch.link"
	// linkType is the type of the link record's opaque item.
	linkType = "turnkit.branch.link"
	// endRun names no run: ListBefore with it reads a whole session.
	endRun = "turnkit.branch.end"
	// maxDepth bounds a chain of forks of forks.
	maxDepth = 64
)

// A link is what a fork records: its first N items are the first N of
// session Parent's items written before Parent's write stamp Stamp, whose
// digest was Digest at the fork.
type link struct {
	Type   string `json:"type"`
	Parent string `json:"parent"`
	N      int    `json:"n"`
	Stamp  int64  `json:"stamp"`
	Digest string `json:"digest"`
}

// item returns the link as the opaque item its record stores.
func (l link) item() (state.Item, error) {
	l.Type = linkType
	raw, err := json.Marshal(l)
	if err != nil {
		return state.Item{}, err
	}
	it, err := state.ParseItem(state.KindOpaque, raw)
	return it.WithSeq(1), err
}

// isLink reports whether it has the form of a link record.
func isLink(it state.Item) bool {
	return it.Kind() == state.KindOpaque && it.Name() == linkType && it.Seq() == 1
}

// digest returns the digest of items: kinds, positions and payloads.
func digest(items []state.Item) string {
	h := sha256.New()
	var buf []byte
	for _, it := range items {
		buf = binary.AppendUvarint(buf[:0], uint64(it.Kind()))
		buf = binary.AppendVarint(buf, it.Seq())
		buf = binary.AppendUvarint(buf, uint64(it.RawLen()))
		buf = it.AppendRaw(buf)
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// A Store is a session store whose forks share their parent's items by
// reference: [Session] given a Store writes one link record in the fork's
// session, and the Store's reads of the fork resolve it. Sessions that
// are not forks read as the inner store reads them, after one check. Make
// it with [Wrap]; see the package documentation.
type Store struct {
	inner session.Store
}

var (
	_ session.Store  = (*Store)(nil)
	_ session.Pager  = (*Store)(nil)
	_ session.Lister = (*Store)(nil)
)

// Wrap returns s with forks by reference. Wrap the store every reader of
// a fork uses: the inner store alone reads a fork as its own items and a
// link record. It panics on a nil store.
func Wrap(s session.Store) *Store {
	if s == nil {
		panic("branch: Wrap called with a nil session.Store")
	}
	return &Store{inner: s}
}

// Inner returns the store s wraps.
func (s *Store) Inner() session.Store { return s.inner }

// List returns the session's items in order, a fork's shared items
// first (see [session.Store]).
func (s *Store) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	h, err := s.listBefore(ctx, sessionID, "", session.HistoryQuery{Limit: limit}, 0)
	return h.Items, err
}

// ListBefore returns the items placed before run runID's, a fork's shared
// items first. The shared items count as written when the fork was: a
// q.Stamp at or below the stamp of the fork's link record leaves them out,
// as it leaves out the fork's items written after it.
func (s *Store) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	return s.listBefore(ctx, sessionID, runID, q, 0)
}

// listBefore is ListBefore depth forks down a chain of forks; run ID ""
// is List.
func (s *Store) listBefore(ctx context.Context, sid, runID string, q session.HistoryQuery, depth int) (session.History, error) {
	inner := q
	if q.Limit > 0 {
		inner.Limit = q.Limit + 1 // room for the link record
	}
	var h session.History
	var err error
	if runID == "" {
		h.Items, err = s.inner.List(ctx, sid, inner.Limit)
	} else {
		h, err = s.inner.ListBefore(ctx, sid, runID, inner)
	}
	if err != nil {
		return session.History{}, err
	}
	at, l, err := s.findLink(ctx, sid, h.Items)
	if err != nil || at < 0 {
		h.Items = last(h.Items, q.Limit)
		return h, err
	}
	if depth >= maxDepth {
		return session.History{}, fmt.Errorf("branch: session %q: more than %d forks of forks", sid, maxDepth)
	}
	shared, err := s.shared(ctx, sid, l, depth)
	if err != nil {
		return session.History{}, err
	}
	items := make([]state.Item, 0, len(h.Items)-1+len(shared))
	items = append(append(append(items, h.Items[:at]...), shared...), h.Items[at+1:]...)
	h.Items = last(items, q.Limit)
	return h, nil
}

// last returns the last limit items (all when limit <= 0).
func last(items []state.Item, limit int) []state.Item {
	if limit > 0 && len(items) > limit {
		return items[len(items)-limit:]
	}
	return items
}

// findLink returns the index of the fork's link record among items read
// from session sid and the link, or -1 when there is none. An item of a
// link's form is the record only if it is the one stored at the link
// run's position.
func (s *Store) findLink(ctx context.Context, sid string, items []state.Item) (int, link, error) {
	for i, it := range items {
		if !isLink(it) {
			continue
		}
		stored, ok, err := s.inner.Lookup(ctx, sid, linkRun, 1)
		if err != nil {
			return -1, link{}, fmt.Errorf("branch: read the link of session %q: %w", sid, err)
		}
		if !ok || !stored.Equal(it) {
			continue
		}
		l, err := parseLink(sid, it)
		if err != nil {
			return -1, link{}, err
		}
		return i, l, nil
	}
	return -1, link{}, nil
}

// shared returns the items fork sid shares with its parent, as they were
// at the fork, or an error wrapping [ErrParentChanged].
func (s *Store) shared(ctx context.Context, sid string, l link, depth int) ([]state.Item, error) {
	h, err := s.listBefore(ctx, l.Parent, endRun, session.HistoryQuery{Stamp: l.Stamp}, depth+1)
	if errors.Is(err, ErrParentChanged) {
		return nil, fmt.Errorf("branch: fork %q of %q: %w", sid, l.Parent, err)
	}
	if err != nil {
		return nil, fmt.Errorf("branch: fork %q: read its parent %q: %w", sid, l.Parent, err)
	}
	if len(h.Items) < l.N || digest(h.Items[:l.N]) != l.Digest {
		return nil, fmt.Errorf("branch: fork %q of %q at %d: %w", sid, l.Parent, l.N, ErrParentChanged)
	}
	return h.Items[:l.N:l.N], nil
}

// Append stores items of run runID (see [session.Store]). The run ID of
// link records is refused with [session.ErrInvalid].
func (s *Store) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if runID == linkRun || runID == endRun {
		return fmt.Errorf("branch: append to session %q: run ID %q is reserved: %w", sessionID, runID, session.ErrInvalid)
	}
	return s.inner.Append(ctx, sessionID, runID, items)
}

// SaveAppend saves run and appends items of it to the session in the
// inner store's one transaction (session/sqlite, session/postgres,
// session/redis, and session/encrypt's Store over them offer it), so that
// a checkpointer whose session store is a fork store over its state store
// keeps its one-transaction path (see middleware/checkpoint's Atomic). A
// fork's link run ID is refused with [session.ErrInvalid], as by Append;
// an inner store without SaveAppend fails with an error wrapping
// [errors.ErrUnsupported] and writes nothing.
func (s *Store) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	as, ok := s.inner.(interface {
		SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error
	})
	if !ok {
		return fmt.Errorf("branch: %T does not save and append in one transaction: %w", s.inner, errors.ErrUnsupported)
	}
	if run != nil && (run.ID() == linkRun || run.ID() == endRun) {
		return fmt.Errorf("branch: append to session %q: run ID %q is reserved: %w", sessionID, run.ID(), session.ErrInvalid)
	}
	return as.SaveAppend(ctx, run, sessionID, items)
}

// Lookup returns the item stored at (runID, seq): one of the session's
// own, or, in a fork, one it shares with its parent (a position its
// parent holds is then checked among the shared items, which costs a read
// of the parent's items, as a List of the fork does).
func (s *Store) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	return s.lookup(ctx, sessionID, runID, seq, 0)
}

// lookup is Lookup depth forks down a chain of forks. A position that no
// session up the chain holds costs a lookup in each, no read of items.
func (s *Store) lookup(ctx context.Context, sid, runID string, seq int64, depth int) (state.Item, bool, error) {
	if runID == linkRun {
		return state.Item{}, false, nil
	}
	it, ok, err := s.inner.Lookup(ctx, sid, runID, seq)
	if err != nil || ok {
		return it, ok, err
	}
	l, linked, err := s.linkOf(ctx, sid)
	if err != nil || !linked {
		return state.Item{}, false, err
	}
	if depth >= maxDepth {
		return state.Item{}, false, fmt.Errorf("branch: session %q: more than %d forks of forks", sid, maxDepth)
	}
	if _, up, err := s.lookup(ctx, l.Parent, runID, seq, depth+1); err != nil || !up {
		return state.Item{}, false, err // not shared, whatever the parent's items
	}
	es, err := s.sharedEntries(ctx, sid, l, depth)
	if err != nil {
		return state.Item{}, false, err
	}
	for _, e := range es {
		if e.RunID == runID && e.Item.Seq() == seq {
			return e.Item, true, nil
		}
	}
	return state.Item{}, false, nil
}

// linkOf returns the link of session sid, if it is a fork.
func (s *Store) linkOf(ctx context.Context, sid string) (link, bool, error) {
	it, ok, err := s.inner.Lookup(ctx, sid, linkRun, 1)
	if err != nil {
		return link{}, false, fmt.Errorf("branch: read the link of session %q: %w", sid, err)
	}
	if !ok || !isLink(it) {
		return link{}, false, nil
	}
	l, err := parseLink(sid, it)
	return l, err == nil, err
}

// parseLink decodes the link record it of session sid.
func parseLink(sid string, it state.Item) (link, error) {
	var l link
	if err := json.Unmarshal(it.Raw(), &l); err != nil || l.Parent == "" || l.N < 0 {
		return link{}, fmt.Errorf("branch: the link of session %q: %w", sid, session.ErrCorrupt)
	}
	return l, nil
}

// sharedEntries returns the items fork sid shares with its parent (see
// shared) as entries of the parent's runs, with their places in the
// parent: each shared item matched, in order, to the first parent entry
// equal to it (kind, position and JSON) after the last one matched. The
// parent's entries are its items now, which hold the shared ones in their
// order (shared checks that none was removed) and may hold others
// between them (late commits of earlier runs, written after the fork):
// one of those equal to the next shared item would be taken for it, the
// same item under another run.
func (s *Store) sharedEntries(ctx context.Context, sid string, l link, depth int) ([]session.Entry, error) {
	items, err := s.shared(ctx, sid, l, depth)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	all, err := s.allEntries(ctx, l.Parent, depth+1)
	if err != nil {
		return nil, fmt.Errorf("branch: fork %q: read its parent %q: %w", sid, l.Parent, err)
	}
	out := make([]session.Entry, 0, len(items))
	for _, e := range all {
		if len(out) < len(items) && e.Item.Equal(items[len(out)]) {
			out = append(out, e)
		}
	}
	if len(out) < len(items) {
		return nil, fmt.Errorf("branch: fork %q of %q at %d: %w", sid, l.Parent, l.N, ErrParentChanged)
	}
	return out, nil
}

// allEntries returns every entry of session sid in order, read through s
// a page at a time from the newest back, depth forks down a chain.
func (s *Store) allEntries(ctx context.Context, sid string, depth int) ([]session.Entry, error) {
	return readBack(func(q session.PageQuery) (session.ItemPage, error) { return s.listPage(ctx, sid, q, depth) })
}

// Pop removes and returns the session's last item. On a fork whose own
// items are all gone it fails with [ErrShared] and changes nothing.
func (s *Store) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	tail, err := s.inner.List(ctx, sessionID, 1)
	if err != nil {
		return state.Item{}, false, err
	}
	if at, l, err := s.findLink(ctx, sessionID, tail); err != nil || at >= 0 {
		if err == nil && l.N == 0 {
			return state.Item{}, false, nil // nothing shared, nothing of its own
		}
		if err == nil {
			err = fmt.Errorf("branch: pop session %q: %w", sessionID, ErrShared)
		}
		return state.Item{}, false, err
	}
	it, ok, err := s.inner.Pop(ctx, sessionID)
	if err != nil || !ok || !isLink(it) {
		return it, ok, err
	}
	// A concurrent Pop took the last own item in between: put the link
	// record back (it gets a new write stamp).
	if err := s.inner.Append(ctx, sessionID, linkRun, []state.Item{it}); err != nil {
		return state.Item{}, false, fmt.Errorf("branch: pop session %q: restore its link: %w", sessionID, err)
	}
	return state.Item{}, false, fmt.Errorf("branch: pop session %q: %w", sessionID, ErrShared)
}

// Clear removes every item of the session; a fork's link goes with them,
// its parent is not touched.
func (s *Store) Clear(ctx context.Context, sessionID string) error {
	return s.inner.Clear(ctx, sessionID)
}

// Close closes the inner store.
func (s *Store) Close() error { return s.inner.Close() }

// ListSessions lists the inner store's sessions (see [session.Lister]).
func (s *Store) ListSessions(ctx context.Context, q session.SessionQuery) (session.SessionPage, error) {
	l, ok := s.inner.(session.Lister)
	if !ok {
		return session.SessionPage{}, fmt.Errorf("branch: %T does not list sessions", s.inner)
	}
	return l.ListSessions(ctx, q)
}

// ListPage returns a page of the session's items (see [session.Pager]),
// newest first: a fork's own items, then the items it shares with its
// parent, as entries of the parent's runs with their places in the
// parent (so a page that holds both goes from the shared items' places to
// the fork's own), its link record left out. A page of shared items costs
// a read of the parent's items, as a List of the fork does; its cursor is
// the Store's own ("s" and the position among the shared items), the
// others the inner store's.
func (s *Store) ListPage(ctx context.Context, sessionID string, q session.PageQuery) (session.ItemPage, error) {
	return s.listPage(ctx, sessionID, q, 0)
}

// listPage is ListPage depth forks down a chain of forks.
func (s *Store) listPage(ctx context.Context, sid string, q session.PageQuery, depth int) (session.ItemPage, error) {
	if depth > maxDepth {
		return session.ItemPage{}, fmt.Errorf("branch: session %q: more than %d forks of forks", sid, maxDepth)
	}
	if strings.HasPrefix(q.Cursor, sharedCursor) {
		return s.sharedPage(ctx, sid, q, depth)
	}
	p, ok := s.inner.(session.Pager)
	if !ok {
		return session.ItemPage{}, fmt.Errorf("branch: %T does not page sessions", s.inner)
	}
	page, err := p.ListPage(ctx, sid, q)
	if err != nil || len(page.Entries) == 0 || page.Entries[0].RunID != linkRun {
		return page, err
	}
	// The link record is the session's first item: the page reached the
	// shared items, which fill what room the fork's own leave.
	own := page.Entries[1:]
	l, linked, err := s.linkOf(ctx, sid)
	if err != nil || !linked {
		page.Entries = own
		return page, err
	}
	shared, err := s.sharedEntries(ctx, sid, l, depth)
	if err != nil {
		return session.ItemPage{}, err
	}
	from := max(0, len(shared)-(q.PageSize()-len(own)))
	page.Entries = append(shared[from:len(shared):len(shared)], own...)
	page.Next = ""
	if from > 0 {
		page.Next = sharedCursor + strconv.FormatInt(int64(from), 36)
	}
	return page, nil
}

// sharedCursor starts the cursor of a page of a fork's shared items: the
// page ends before the shared item at that index (base 36; the first is
// 0, and no page ends before it).
const sharedCursor = "s"

// sharedPage returns the page of fork sid's shared items that q.Cursor
// (a sharedCursor) ends before.
func (s *Store) sharedPage(ctx context.Context, sid string, q session.PageQuery, depth int) (session.ItemPage, error) {
	end, err := strconv.ParseInt(strings.TrimPrefix(q.Cursor, sharedCursor), 36, 64)
	if err != nil || end < 1 || sharedCursor+strconv.FormatInt(end, 36) != q.Cursor {
		return session.ItemPage{}, &session.CursorError{Cursor: q.Cursor}
	}
	l, linked, err := s.linkOf(ctx, sid)
	if err != nil {
		return session.ItemPage{}, err
	}
	if !linked || end > int64(l.N) {
		return session.ItemPage{}, &session.CursorError{Cursor: q.Cursor}
	}
	shared, err := s.sharedEntries(ctx, sid, l, depth)
	if err != nil {
		return session.ItemPage{}, err
	}
	from := max(0, int(end)-q.PageSize())
	page := session.ItemPage{Entries: shared[from:end:end]}
	if from > 0 {
		page.Next = sharedCursor + strconv.FormatInt(int64(from), 36)
	}
	return page, nil
}

// fork writes the link of session to: its first n items are from's first
// n (fewer if from holds fewer), read through s. It returns the number of
// items shared.
func (s *Store) fork(ctx context.Context, from, to string, n int) (int, error) {
	h, err := s.ListBefore(ctx, from, endRun, session.HistoryQuery{})
	if err != nil {
		return 0, fmt.Errorf("branch: read session %q: %w", from, err)
	}
	n = min(n, len(h.Items))
	it, err := link{Parent: from, N: n, Stamp: h.Stamp, Digest: digest(h.Items[:n])}.item()
	if err != nil {
		return 0, fmt.Errorf("branch: fork session %q: %w", from, err)
	}
	if err := s.inner.Append(ctx, to, linkRun, []state.Item{it}); err != nil {
		if errors.Is(err, session.ErrConflict) {
			return 0, fmt.Errorf("branch: fork session %q into %q: %w: %w", from, to, ErrTargetExists, err)
		}
		return 0, fmt.Errorf("branch: fork session %q into %q: %w", from, to, err)
	}
	return n, nil
}
