package encrypt

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Backend keeps sessions and checkpoints in one database, and saves a
// checkpoint with an append in one transaction: session/sqlite,
// session/postgres, session/redis.
type Backend interface {
	session.Store
	state.Store
	SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error
}

// A Store is a [Backend] whose items and checkpoints are sealed: it is a
// session.Store, a state.Store (and their Lister and Pager when the
// backend has them) and keeps SaveAppend's one transaction, so that
// middleware/checkpoint uses it as it uses the backend. Make it with
// [Wrap].
type Store struct {
	*SessionStore
	*RunStore
	inner Backend
	kr    *Keyring
}

var (
	_ Backend        = (*Store)(nil)
	_ session.Lister = (*Store)(nil)
	_ session.Pager  = (*Store)(nil)
	_ state.Lister   = (*Store)(nil)
)

// Wrap returns b with its items and checkpoints sealed under kr, which
// keeps the sessions' key records in b ([KeysIn]) unless it was given a
// key store. b must have been opened with kr's codec
// (sqlite.WithCodec(kr.Codec()) and the like), which seals the
// checkpoints; Wrap seals the items and loads the keys. It panics on a
// nil argument.
func Wrap(b Backend, kr *Keyring) *Store {
	if b == nil || kr == nil {
		panic("encrypt: Wrap called with a nil Backend or Keyring")
	}
	kr.bindKeys(KeysIn(b))
	ss := &SessionStore{inner: b, kr: kr, inStore: sealsWith(b, kr)}
	return &Store{SessionStore: ss, RunStore: &RunStore{inner: b, kr: kr, sessions: ss}, inner: b, kr: kr}
}

// SaveAppend saves run and appends items, sealed, in the backend's one
// transaction (see the backend's SaveAppend).
func (s *Store) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	if run == nil {
		return s.inner.SaveAppend(ctx, run, sessionID, items)
	}
	sealed := items
	if len(items) > 0 && sessionID != "" && valid(items) {
		dk, err := s.kr.key(ctx, sessionID, true)
		if err != nil {
			return err
		}
		if !s.inStore { // else the backend seals them as it writes them
			if sealed, err = sealAll(dk, sessionID, run.ID(), items); err != nil {
				return err
			}
		}
	}
	return s.RunStore.save(ctx, run, func() error { return s.inner.SaveAppend(ctx, run, sessionID, sealed) })
}

// A SessionStore is a session.Store whose items are sealed. Make it with
// [WrapSessions], or use a [Store].
type SessionStore struct {
	inner session.Store
	kr    *Keyring
	// inStore: the inner store seals and opens items itself, through kr
	// (sqlite.WithItemCodec): the wrapper loads their keys only.
	inStore bool
}

var (
	_ session.Store        = (*SessionStore)(nil)
	_ session.ChangeReader = (*SessionStore)(nil)
)

// WrapSessions returns s with its items sealed under kr, which must have
// a key store ([WithKeyStore], or a [WrapRuns] of the same keyring).
func WrapSessions(s session.Store, kr *Keyring) *SessionStore {
	if s == nil || kr == nil {
		panic("encrypt: WrapSessions called with a nil session.Store or Keyring")
	}
	return &SessionStore{inner: s, kr: kr, inStore: sealsWith(s, kr)}
}

// preload loads the session's data key before a read of a store that
// opens items itself, so that it is not read from the key store while the
// read's rows are open. Its error is dropped: a session without a key has
// no item to open, and any other failure is the items' OpenItem's.
func (s *SessionStore) preload(ctx context.Context, sid string) {
	if s.inStore {
		_, _ = s.kr.key(ctx, sid, false)
	}
}

// valid reports whether every item can be sealed; the inner store refuses
// the others with session.ErrInvalid.
func valid(items []state.Item) bool {
	for _, it := range items {
		if it.IsZero() || !it.Kind().Valid() || it.Seq() < 1 {
			return false
		}
	}
	return true
}

func sealAll(dk *dataKey, sid, runID string, items []state.Item) ([]state.Item, error) {
	out := make([]state.Item, len(items))
	for i, it := range items {
		var err error
		if out[i], err = sealItem(dk, sid, runID, it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// openAll opens items of session sid in place; runs, when not nil, are
// the items' runs.
func (s *SessionStore) openAll(ctx context.Context, sid string, items []state.Item) error {
	if len(items) == 0 {
		return nil
	}
	dk, err := s.kr.key(ctx, sid, false)
	if err != nil {
		return err
	}
	for i, it := range items {
		if items[i], err = openItem(dk, sid, "", it); err != nil {
			return err
		}
	}
	return nil
}

// List returns the session's items, opened (see [session.Store]).
func (s *SessionStore) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	s.preload(ctx, sessionID)
	items, err := s.inner.List(ctx, sessionID, limit)
	if err != nil || s.inStore {
		return items, err
	}
	return items, s.openAll(ctx, sessionID, items)
}

// ListBefore returns the items before run runID's, opened.
func (s *SessionStore) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	s.preload(ctx, sessionID)
	h, err := s.inner.ListBefore(ctx, sessionID, runID, q)
	if err != nil || s.inStore {
		return h, err
	}
	return h, s.openAll(ctx, sessionID, h.Items)
}

// Append seals items and appends them (see [session.Store]). A session's
// first append creates its data key.
func (s *SessionStore) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if len(items) == 0 || sessionID == "" || runID == "" || !valid(items) {
		return s.inner.Append(ctx, sessionID, runID, items) // refused, or nothing to store
	}
	dk, err := s.kr.key(ctx, sessionID, true)
	if err != nil {
		return err
	}
	if s.inStore {
		return s.inner.Append(ctx, sessionID, runID, items) // sealed as written
	}
	sealed, err := sealAll(dk, sessionID, runID, items)
	if err != nil {
		return err
	}
	return s.inner.Append(ctx, sessionID, runID, sealed)
}

// ReadChanges reads what the session gained since q.Since, or its last
// q.Limit items (see [session.ChangeReader]), opened: a history cache
// ([session.Cache], persistence's) over the sealed store decodes and
// opens only what was written since its last read. It fails with an error
// wrapping [errors.ErrUnsupported] when the inner store does not read
// changes, which a [session.Cache] reads as a store without them.
func (s *SessionStore) ReadChanges(ctx context.Context, sessionID string, q session.ChangeQuery) (session.Changes, error) {
	r, ok := s.inner.(session.ChangeReader)
	if !ok {
		return session.Changes{}, fmt.Errorf("encrypt: %T does not read changes: %w", s.inner, errors.ErrUnsupported)
	}
	s.preload(ctx, sessionID)
	ch, err := r.ReadChanges(ctx, sessionID, q)
	if err != nil || len(ch.Items) == 0 || s.inStore {
		return ch, err
	}
	dk, err := s.kr.key(ctx, sessionID, false)
	if err != nil {
		return session.Changes{}, err
	}
	for i, p := range ch.Items {
		if ch.Items[i].Item, err = openItem(dk, sessionID, "", p.Item); err != nil {
			return session.Changes{}, err
		}
	}
	return ch, nil
}

// Lookup returns the item at (runID, seq), opened.
func (s *SessionStore) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	s.preload(ctx, sessionID)
	it, ok, err := s.inner.Lookup(ctx, sessionID, runID, seq)
	if err != nil || !ok || s.inStore {
		return it, ok, err
	}
	dk, err := s.kr.key(ctx, sessionID, false)
	if err != nil {
		return state.Item{}, false, err
	}
	it, err = openItem(dk, sessionID, runID, it)
	return it, err == nil, err
}

// Pop removes the session's last item and returns it, opened.
func (s *SessionStore) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	s.preload(ctx, sessionID)
	it, ok, err := s.inner.Pop(ctx, sessionID)
	if err != nil || !ok || s.inStore {
		return it, ok, err
	}
	dk, err := s.kr.key(ctx, sessionID, false)
	if err != nil {
		return state.Item{}, false, err
	}
	it, err = openItem(dk, sessionID, "", it)
	return it, err == nil, err
}

// Clear removes the session's items; its data key stays.
func (s *SessionStore) Clear(ctx context.Context, sessionID string) error {
	return s.inner.Clear(ctx, sessionID)
}

// Close closes the inner store.
func (s *SessionStore) Close() error { return s.inner.Close() }

// ListSessions lists the inner store's sessions (IDs are kept in the
// clear), or fails if it is not a [session.Lister].
func (s *SessionStore) ListSessions(ctx context.Context, q session.SessionQuery) (session.SessionPage, error) {
	l, ok := s.inner.(session.Lister)
	if !ok {
		return session.SessionPage{}, fmt.Errorf("encrypt: %T does not list sessions", s.inner)
	}
	return l.ListSessions(ctx, q)
}

// ListPage returns a page of the session's items, opened, or fails if the
// inner store is not a [session.Pager].
func (s *SessionStore) ListPage(ctx context.Context, sessionID string, q session.PageQuery) (session.ItemPage, error) {
	p, ok := s.inner.(session.Pager)
	if !ok {
		return session.ItemPage{}, fmt.Errorf("encrypt: %T does not page sessions", s.inner)
	}
	s.preload(ctx, sessionID)
	page, err := p.ListPage(ctx, sessionID, q)
	if err != nil || len(page.Entries) == 0 || s.inStore {
		return page, err
	}
	dk, err := s.kr.key(ctx, sessionID, false)
	if err != nil {
		return session.ItemPage{}, err
	}
	for i, e := range page.Entries {
		if page.Entries[i].Item, err = openItem(dk, sessionID, e.RunID, e.Item); err != nil {
			return session.ItemPage{}, err
		}
	}
	return page, nil
}

// A RunStore is a state.Store whose checkpoints are sealed: the inner
// store seals them with the keyring's codec, and the RunStore loads the
// sessions' data keys around its calls. Make it with [WrapRuns], or use
// a [Store].
type RunStore struct {
	inner    state.Store
	kr       *Keyring
	sessions *SessionStore // resolves a loaded run's history; nil: none
}

var _ state.Store = (*RunStore)(nil)

// WrapRuns returns st, opened with kr's codec, with the sessions' data
// keys loaded around its calls: a *RunStore, which is a [state.Lister]
// when st is one. kr keeps its key records in st unless it was given a
// key store. sessions, when not nil, is the sealed session store a loaded
// run's history reference is read from.
func WrapRuns(st state.Store, kr *Keyring, sessions *SessionStore) state.Store {
	if st == nil || kr == nil {
		panic("encrypt: WrapRuns called with a nil state.Store or Keyring")
	}
	kr.bindKeys(KeysIn(st))
	r := &RunStore{inner: st, kr: kr, sessions: sessions}
	if _, ok := st.(state.Lister); !ok {
		return unlisted{r}
	}
	return r
}

// unlisted is a RunStore over a store that does not list runs: it hides
// ListRuns, so that callers' type assertions see what the store offers.
type unlisted struct{ r *RunStore }

func (u unlisted) Load(ctx context.Context, runID string) (*state.Run, error) {
	return u.r.Load(ctx, runID)
}

func (u unlisted) Save(ctx context.Context, run *state.Run) error { return u.r.Save(ctx, run) }

func (u unlisted) Delete(ctx context.Context, runID string) error { return u.r.Delete(ctx, runID) }

// maxKeyRetries bounds the loads of a data key evicted between its load
// and its use by the inner store.
const maxKeyRetries = 3

// retryKey runs op, loading the data key it reports missing and running
// it again; a missing key it reports does not change what is stored.
func (r *RunStore) retryKey(ctx context.Context, create bool, op func() error) error {
	for attempt := 0; ; attempt++ {
		err := op()
		if err == nil {
			return nil // before errors.As, whose target escapes
		}
		var nl *notLoadedError
		if !errors.As(err, &nl) || attempt == maxKeyRetries {
			return err
		}
		if _, err := r.kr.key(ctx, nl.sessionID, create); err != nil {
			return err
		}
	}
}

// Load loads the run's checkpoint and opens it. A checkpoint stored under
// another run's ID fails with [ErrTampered].
func (r *RunStore) Load(ctx context.Context, runID string) (*state.Run, error) {
	var run *state.Run
	err := r.retryKey(ctx, false, func() error {
		var err error
		run, err = r.inner.Load(ctx, runID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if run.ID() != runID {
		return nil, &state.StoreError{Op: "load", RunID: runID,
			Err: &SealError{SessionID: run.SessionID(), RunID: runID, What: "head", Err: fmt.Errorf("it is run %q's: %w", run.ID(), ErrTampered)}}
	}
	if sid, n, pending, _ := run.HistoryRef(); pending && r.sessions != nil {
		// The inner store read the history sealed; read it opened.
		var hist session.History
		if n > 0 {
			q := session.HistoryQuery{Limit: n, Stamp: run.HistoryStamp()}
			if hist, err = r.sessions.ListBefore(ctx, sid, runID, q); err != nil {
				return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
			}
		}
		if err := run.ResolveHistory(hist.Items); err != nil && !errors.Is(err, state.ErrHistoryChanged) {
			return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
		}
	}
	return run, nil
}

// Save seals and saves run (see [state.Store]). A run of an erased
// session fails with [ErrErased].
func (r *RunStore) Save(ctx context.Context, run *state.Run) error {
	if run == nil {
		return r.inner.Save(ctx, run)
	}
	return r.save(ctx, run, func() error { return r.inner.Save(ctx, run) })
}

// save runs a save of run with its session's key loaded; a conflict of a
// run whose session was erased is reported as [ErrErased].
func (r *RunStore) save(ctx context.Context, run *state.Run, op func() error) error {
	sid := run.SessionID()
	if _, err := r.kr.key(ctx, sid, true); err != nil {
		return err
	}
	err := r.retryKey(ctx, true, op)
	if errors.Is(err, state.ErrConflict) {
		r.kr.forget(sid) // read the record again: was the session erased?
		if _, kerr := r.kr.key(ctx, sid, false); errors.Is(kerr, ErrErased) {
			return &state.StoreError{Op: "save", RunID: run.ID(), Err: kerr}
		}
	}
	return err
}

// Delete deletes the run's checkpoint.
func (r *RunStore) Delete(ctx context.Context, runID string) error { return r.inner.Delete(ctx, runID) }

// ListRuns lists the inner store's runs, leaving out the key store's own
// runs ([KeysIn]), or fails if it is not a [state.Lister].
func (r *RunStore) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	l, ok := r.inner.(state.Lister)
	if !ok {
		return state.RunPage{}, fmt.Errorf("encrypt: %T does not list runs", r.inner)
	}
	// A page that held key runs is topped up from the pages after it,
	// each asked for what is missing, so that the last page read ends
	// where the inner listing's cursor continues.
	want := q.PageSize()
	var out state.RunPage
	for {
		page, err := l.ListRuns(ctx, q)
		if err != nil {
			return state.RunPage{}, err
		}
		for _, sum := range page.Runs {
			if !isKeyRun(sum.RunID) {
				out.Runs = append(out.Runs, sum)
			}
		}
		out.Next = page.Next
		if len(out.Runs) >= want || page.Next == "" {
			return out, nil
		}
		q.Cursor, q.Limit = page.Next, want-len(out.Runs)
	}
}
