package memstore

import (
	"context"
	"errors"
	"sync"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	e, ok := s.runs[runID]
	var (
		head, context []byte
		items         []state.Piece
	)
	if ok {
		head, context = e.head, e.context
		items = make([]state.Piece, 0, len(e.items))
		for _, p := range e.items {
			items = append(items, p)
		}
	}
	s.mu.Unlock()
	if !ok {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	r, err := state.Assemble(head, context, items, s.cfg.unmarshal...)
	if err != nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
	}
	return r, nil
}

// Save stores what changed in run if the stored version equals
// run.Version() and sets run's version to the new one; otherwise it
// returns [state.ErrConflict] and changes nothing.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if run == nil || run.ID() == "" {
		return &state.StoreError{Op: "save", Err: errors.New("nil run or empty run ID")}
	}
	d, err := run.Delta(s.cfg.marshal...)
	if err != nil {
		return &state.StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.runs[run.ID()]
	var cur int64
	if e != nil {
		cur = e.version
	}
	if d.Base != cur {
		return &state.StoreError{Op: "save", RunID: run.ID(), Err: state.ErrConflict, Have: d.Base, Stored: cur}
	}
	if e == nil || d.Full {
		old := e
		e = &entry{items: make(map[int64]state.Piece, len(d.Items))}
		if old != nil {
			e.serial, e.summary = old.serial, old.summary
		}
		s.runs[run.ID()] = e
	}
	s.index(e, d.Summary)
	e.version, e.head = d.Version, d.Head
	if d.Context != nil {
		e.context = d.Context
	}
	for _, p := range d.Items {
		e.items[p.Seq] = p
	}
	runcore.Saved(run, d)
	return nil
}

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
