package compaction

import "github.com/turnkit/turnkit/state"

// An Option configures [Middleware].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	maxItems  int
	maxTokens int
	keep      int
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

// WithMaxItems compacts a model call's input when it holds more than n
// items. There is no default; n below 1 is ignored. A later call replaces
// an earlier one.
func WithMaxItems(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxItems = n
		}
	})
}

// WithMaxTokens compacts a model call's input when its estimated tokens
// ([EstimateTokens]) pass n. There is no default; n below 1 is ignored. A
// later call replaces an earlier one.
func WithMaxTokens(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxTokens = n
		}
	})
}

// WithKeep sets how many of the input's last items a compaction keeps as
// they are (more, to keep a call with its output). The default keeps a
// quarter of the threshold: a quarter of the items with WithMaxItems, and
// with WithMaxTokens alone, the last items that fit in a quarter of the
// tokens (at least the last one). A later call replaces an earlier one; n
// below 0 is ignored.
func WithKeep(n int) Option {
	return optionFunc(func(c *config) {
		if n >= 0 {
			c.keep = n + 1 // 0 means "the default"
		}
	})
}

// over reports whether in passes the threshold.
func (c *config) over(in state.Items) bool {
	if c.maxItems > 0 && in.Len() > c.maxItems {
		return true
	}
	return c.maxTokens > 0 && EstimateTokens(in) > c.maxTokens
}

// keepFor returns how many of in's last items to keep.
func (c *config) keepFor(in state.Items) int {
	if c.keep > 0 {
		return c.keep - 1
	}
	if c.maxItems > 0 {
		return c.maxItems / 4
	}
	budget, n := c.maxTokens, 0 // the bytes of a quarter of the tokens
	for i := in.Len() - 1; i >= 0; i-- {
		budget -= in.At(i).RawLen()
		if budget < 0 {
			break
		}
		n++
	}
	return max(n, 1)
}
