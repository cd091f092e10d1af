package storage

import (
	"context"
	"slices"

	"github.com/turnkit/turnkit/state"
)

// An Option configures [NewStore].
type Option func(*config)

type config struct {
	marshal   []state.MarshalOption
	unmarshal []state.UnmarshalOption
}

// WithCodec makes the store encode heads with marshal (such as
// [state.WithSigningKey]) and decode what it loads with unmarshal (such as
// [state.WithVerifyKeys]).
func WithCodec(marshal []state.MarshalOption, unmarshal []state.UnmarshalOption) Option {
	return func(c *config) {
		c.marshal = append(slices.Clip(c.marshal), marshal...)
		c.unmarshal = append(slices.Clip(c.unmarshal), unmarshal...)
	}
}

// NewStore returns b as a [state.Store]: its Save is [Save], its Load
// [Load] and its Delete b's, with the codec of opts. When b also
// implements [state.Lister], so does the store, by b's ListRuns.
func NewStore(b Backend, opts ...Option) state.Store {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	s := &store{b: b, cfg: c}
	if l, ok := b.(state.Lister); ok {
		return &listingStore{store: s, Lister: l}
	}
	return s
}

// store is a [Backend] seen as a [state.Store].
type store struct {
	b   Backend
	cfg config
}

func (s *store) Load(ctx context.Context, runID string) (*state.Run, error) {
	return Load(ctx, s.b, runID, s.cfg.unmarshal...)
}

func (s *store) Save(ctx context.Context, run *state.Run) error {
	return Save(ctx, s.b, run, s.cfg.marshal...)
}

func (s *store) Delete(ctx context.Context, runID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.b.Delete(ctx, runID); err != nil {
		return storeError("delete", runID, err)
	}
	return nil
}

// listingStore is a store over a backend that lists runs.
type listingStore struct {
	*store
	state.Lister
}
