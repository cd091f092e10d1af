package logging

import "time"

// An Option configures [Middleware].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is read-only once [Middleware] returned.
type config struct {
	payloads bool
	now      func() time.Time
}

func newConfig(opts []Option) *config {
	c := &config{now: time.Now}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	return c
}

// WithPayloads adds what the model and the tools exchanged to the events:
// tool arguments and outputs, the model's output text, guardrail and
// decision messages. They may hold personal or secret data, so they are
// off by default.
func WithPayloads() Option {
	return optionFunc(func(c *config) { c.payloads = true })
}

// WithClock sets the clock durations are measured with (default
// time.Now). A nil func keeps the default.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(c *config) {
		if now != nil {
			c.now = now
		}
	})
}
