package checkpoint

import "time"

// An Option configures [New].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	detachedTimeout time.Duration
}

// defaultDetachedTimeout bounds the saves made after a run's context is
// done.
const defaultDetachedTimeout = 30 * time.Second

func newConfig(opts []Option) config {
	c := config{detachedTimeout: defaultDetachedTimeout}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithDetachedSaveTimeout bounds the save a run makes when it returns,
// which runs even if the run's context was cancelled (the cancelled run's
// state must still reach the store). The default is 30 seconds; d <= 0
// keeps it. A later call replaces an earlier one.
func WithDetachedSaveTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.detachedTimeout = d
		}
	})
}
