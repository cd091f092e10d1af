package memstore

import (
	"context"
	"sync"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/storage"
)

// A Store is a [state.Store] in memory. It keeps what a durable store
// keeps, encoded: a head and the items of each save (see [state.Delta]),
// so a save costs O(its new items), what it returns shares nothing with
// what it was given, and everything goes through the same codec as a
// durable store. It is safe for concurrent use.
type Store struct {
	cfg  config
	mu   sync.Mutex
	runs map[string]*entry
	// The listing's index (list.go): the last serial given, the run of
	// each serial, and the serials of each list in ascending order.
	serial   int64
	bySerial map[int64]string
	lists    map[listKey][]int64
}

type entry struct {
	version int64
	head    []byte
	context []byte
	items   map[int64]state.Piece
	serial  int64
	summary state.RunSummary
}

var (
	_ state.Store  = (*Store)(nil)
	_ state.Lister = (*Store)(nil)
)

// New returns an empty in-memory store.
func New(opts ...Option) *Store {
	return &Store{cfg: newConfig(opts), runs: make(map[string]*entry),
		bySerial: make(map[int64]string), lists: make(map[listKey][]int64)}
}

// Load returns a new copy of the run's checkpoint, or [state.ErrNotFound].
func (s *Store) Load(ctx context.Context, runID string) (*state.Run, error) {
	return storage.Load(ctx, backend{s}, runID, s.cfg.unmarshal...)
}

// Save stores what changed in run if the stored version equals
// run.Version() and sets run's version to the new one; otherwise it
// returns [state.ErrConflict] and changes nothing.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	return storage.Save(ctx, backend{s}, run, s.cfg.marshal...)
}

// backend is the store as a [storage.Backend]: what it keeps of each run,
// without the run.
type backend struct{ s *Store }

// Read returns copies of what the store keeps of the run.
func (b backend) Read(ctx context.Context, runID string) (storage.Stored, error) {
	if err := ctx.Err(); err != nil {
		return storage.Stored{}, err
	}
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.runs[runID]
	if !ok {
		return storage.Stored{}, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	st := storage.Stored{Head: e.head, Context: e.context, Pieces: make([]state.Piece, 0, len(e.items))}
	for _, p := range e.items {
		st.Pieces = append(st.Pieces, p)
	}
	return st, nil
}

// Write applies d if the stored version is d.Base.
func (b backend) Write(ctx context.Context, d *state.Delta) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.runs[d.RunID]
	var cur int64
	if e != nil {
		cur = e.version
	}
	if d.Base != cur {
		return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: state.ErrConflict, Have: d.Base, Stored: cur}
	}
	if e == nil || d.Full {
		old := e
		e = &entry{items: make(map[int64]state.Piece, len(d.Items))}
		if old != nil {
			e.serial, e.summary = old.serial, old.summary
		}
		s.runs[d.RunID] = e
	}
	s.index(e, d.Summary)
	e.version, e.head = d.Version, d.Head
	if d.Context != nil {
		e.context = d.Context
	}
	for _, p := range d.Items {
		e.items[p.Seq] = p
	}
	return d.Version, nil
}

// Delete removes what the store keeps of the run.
func (b backend) Delete(ctx context.Context, runID string) error { return b.s.Delete(ctx, runID) }

// Delete removes the run's checkpoint; a missing one is not an error.
func (s *Store) Delete(ctx context.Context, runID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if e, ok := s.runs[runID]; ok {
		s.unindex(e)
		delete(s.runs, runID)
	}
	s.mu.Unlock()
	return nil
}
