package persistence

import (
	"context"

	"github.com/turnkit/turnkit/state"
)

// A MergeFunc decides what the model sees before a run's input: it gets
// the session history (already cut to the limit, see [WithLimit]) and the
// run's input, and returns the history to put before the input. It may
// filter, trim or summarise the history; the input itself always follows
// it and is always stored. It must not keep or change the slices it gets.
type MergeFunc func(ctx context.Context, history, input []state.Item) ([]state.Item, error)

// An Option configures [Middleware].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	limit int
	merge MergeFunc
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	return c
}

// WithLimit makes a run's first turn read only the last n items of the
// session. The default, and any n below 1, reads the whole session. A
// later call replaces an earlier one.
func WithLimit(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.limit = n
		}
	})
}

// WithMerge sets how the history read on a run's first turn is merged with
// the run's input. The default puts the whole history (cut to the limit)
// before the input. A nil f keeps the default; a later call replaces an
// earlier one.
func WithMerge(f MergeFunc) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.merge = f
		}
	})
}
