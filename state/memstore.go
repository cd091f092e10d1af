package state

import (
	"context"
	"errors"
	"sync"
)

// A StoreOption configures the stores of this package ([NewMemoryStore],
// [NewFileStore]).
type StoreOption interface{ applyStore(*storeConfig) }

type storeConfig struct {
	marshal   marshalConfig
	unmarshal []UnmarshalOption
}

type storeOptionFunc func(*storeConfig)

func (f storeOptionFunc) applyStore(c *storeConfig) { f(c) }

// WithCodec sets the options the store encodes and decodes checkpoints
// with, such as [WithSigningKey] and [WithVerifyKeys]; then a checkpoint
// edited at rest fails to load with [ErrTampered].
func WithCodec(marshal []MarshalOption, unmarshal []UnmarshalOption) StoreOption {
	return storeOptionFunc(func(c *storeConfig) {
		for _, o := range marshal {
			if o != nil {
				o.applyMarshal(&c.marshal)
			}
		}
		c.unmarshal = append(c.unmarshal, unmarshal...)
	})
}

func newStoreConfig(opts []StoreOption) storeConfig {
	var c storeConfig
	for _, o := range opts {
		if o != nil {
			o.applyStore(&c)
		}
	}
	return c
}

// delta returns what saving run writes, encoded with the store's options.
func (c *storeConfig) delta(run *Run) (*Delta, error) {
	if run == nil || run.ID() == "" {
		return nil, &StoreError{Op: "save", Err: errors.New("nil run or empty run ID")}
	}
	d, err := run.deltaWith(&c.marshal, marshalWire)
	if err != nil {
		return nil, &StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	return d, nil
}

// assemble decodes what a store keeps of a run.
func (c *storeConfig) assemble(runID string, head, context []byte, items []Piece) (*Run, error) {
	r, err := Assemble(head, context, items, c.unmarshal...)
	if err != nil {
		return nil, &StoreError{Op: "load", RunID: runID, Err: err}
	}
	return r, nil
}

// A MemoryStore is a [Store] in memory: for tests, examples and one-process
// programs. It keeps what a durable store keeps, encoded: a head and the
// items of each save (see [Delta]), so a save costs O(its new items), what
// it returns shares nothing with what it was given, and everything goes
// through the same codec as a durable store. It is safe for concurrent use.
type MemoryStore struct {
	cfg  storeConfig
	mu   sync.Mutex
	runs map[string]*memEntry
}

type memEntry struct {
	version int64
	head    []byte
	context []byte
	items   map[int64]Piece
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore(opts ...StoreOption) *MemoryStore {
	return &MemoryStore{cfg: newStoreConfig(opts), runs: make(map[string]*memEntry)}
}

// Load returns a new copy of the run's checkpoint, or [ErrNotFound].
func (s *MemoryStore) Load(ctx context.Context, runID string) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	e, ok := s.runs[runID]
	var (
		head, context []byte
		items         []Piece
	)
	if ok {
		head, context = e.head, e.context
		items = make([]Piece, 0, len(e.items))
		for _, p := range e.items {
			items = append(items, p)
		}
	}
	s.mu.Unlock()
	if !ok {
		return nil, &StoreError{Op: "load", RunID: runID, Err: ErrNotFound}
	}
	return s.cfg.assemble(runID, head, context, items)
}

// Save stores what changed in run if the stored version equals
// run.Version() and sets run's version to the new one; otherwise it
// returns [ErrConflict] and changes nothing.
func (s *MemoryStore) Save(ctx context.Context, run *Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := s.cfg.delta(run)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.runs[run.ID()]
	var cur int64
	if e != nil {
		cur = e.version
	}
	if d.Base != cur {
		return &StoreError{Op: "save", RunID: run.ID(), Err: ErrConflict, Have: d.Base, Stored: cur}
	}
	if e == nil || d.Full {
		e = &memEntry{items: make(map[int64]Piece, len(d.Items))}
		s.runs[run.ID()] = e
	}
	e.version, e.head = d.Version, d.Head
	if d.Context != nil {
		e.context = d.Context
	}
	for _, p := range d.Items {
		e.items[p.Seq] = p
	}
	run.Saved(d)
	return nil
}

// Delete removes the run's checkpoint; a missing one is not an error.
func (s *MemoryStore) Delete(ctx context.Context, runID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.runs, runID)
	s.mu.Unlock()
	return nil
}
