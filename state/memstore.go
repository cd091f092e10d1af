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

// encode encodes run as stored version v.
func (c *storeConfig) encode(run *Run, v int64) ([]byte, error) {
	w := run.wire()
	w.Version = v
	return marshalWire(w, &c.marshal)
}

// decode decodes a stored checkpoint; its version is the one it was saved as.
func (c *storeConfig) decode(data []byte) (*Run, error) { return Unmarshal(data, c.unmarshal...) }

// A MemoryStore is a [Store] in memory: for tests, examples and one-process
// programs. It keeps encoded checkpoints, so what it returns shares nothing
// with what it was given and goes through the same codec as a durable
// store. It is safe for concurrent use.
type MemoryStore struct {
	cfg  storeConfig
	mu   sync.Mutex
	runs map[string]memEntry
}

type memEntry struct {
	version int64
	data    []byte
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore(opts ...StoreOption) *MemoryStore {
	return &MemoryStore{cfg: newStoreConfig(opts), runs: make(map[string]memEntry)}
}

// Load returns a new copy of the run's checkpoint, or [ErrNotFound].
func (s *MemoryStore) Load(ctx context.Context, runID string) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	e, ok := s.runs[runID]
	s.mu.Unlock()
	if !ok {
		return nil, &StoreError{Op: "load", RunID: runID, Err: ErrNotFound}
	}
	return s.cfg.decode(e.data)
}

// Save stores run if the stored version equals run.Version() and sets
// run's version to the new one; otherwise it returns [ErrConflict] and
// changes nothing.
func (s *MemoryStore) Save(ctx context.Context, run *Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if run == nil || run.ID() == "" {
		return errors.New("state: save: nil run or empty run ID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.runs[run.ID()].version
	if have := run.Version(); have != cur {
		return &StoreError{Op: "save", RunID: run.ID(), Err: ErrConflict, Have: have, Stored: cur}
	}
	data, err := s.cfg.encode(run, cur+1)
	if err != nil {
		return err
	}
	s.runs[run.ID()] = memEntry{version: cur + 1, data: data}
	run.SetVersion(cur + 1)
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
