package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/turnkit/turnkit/pipeline"
)

// A Class is a class of errors: it reports whether err belongs to it.
// [Middleware] retries the errors of one class and falls back on those of
// another.
type Class func(err error) bool

// Retryable is the class of model errors the adapter marked retryable
// ([pipeline.ModelError].Retryable: 429, 408, 409, 5xx, network failures,
// cut streams).
func Retryable(err error) bool {
	me, ok := errors.AsType[*pipeline.ModelError](err)
	return ok && me.Retryable
}

// ModelErrors is the class of every model error ([*pipeline.ModelError]),
// retryable or not, such as a request the provider refused.
func ModelErrors(err error) bool {
	_, ok := errors.AsType[*pipeline.ModelError](err)
	return ok
}

// Status returns the class of model errors with one of the given HTTP
// statuses.
func Status(codes ...int) Class {
	return func(err error) bool {
		me, ok := errors.AsType[*pipeline.ModelError](err)
		if !ok {
			return false
		}
		for _, c := range codes {
			if me.Status == c {
				return true
			}
		}
		return false
	}
}

// A Fallback is a model called when the models before it failed with an
// error of its class, after their retries. It is retried like the agent's
// model.
type Fallback struct {
	// Model answers in place of the agent's model. It may be another
	// provider's.
	Model pipeline.Model
	// Name, if set, replaces the model name of the call's settings
	// (pipeline.ModelSettings.Model) for this model: a provider's model
	// name means nothing to another.
	Name string
	// On is the class of errors that make the call fall back to this
	// model; nil means [Retryable].
	On Class
}

// An Option configures [Middleware].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Defaults of [Middleware].
const (
	DefaultAttempts = 3
	DefaultBase     = 500 * time.Millisecond
	DefaultMax      = 10 * time.Second
)

// config is read-only once [Middleware] returned.
type config struct {
	attempts  int
	base, max time.Duration
	on        Class
	fallbacks []Fallback
	sleep     func(ctx context.Context, d time.Duration) error
	now       func() time.Time
	random    func() float64
}

func newConfig(opts []Option) *config {
	c := &config{
		attempts: DefaultAttempts, base: DefaultBase, max: DefaultMax,
		on: Retryable, sleep: sleep, now: time.Now, random: rand.Float64,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	return c
}

// WithAttempts sets how many times each model is called at most, the
// first call included (default [DefaultAttempts]). 1 turns retries off
// and keeps the fallbacks. Values below 1 are ignored.
func WithAttempts(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.attempts = n
		}
	})
}

// WithBackoff sets the exponential backoff: the wait before the k-th
// retry is drawn between half and all of base·2^(k-1), capped at max
// (defaults [DefaultBase] and [DefaultMax]). A wait the server asked for
// (pipeline.ModelError.RetryAfter) replaces it. Values below 1 keep the
// default.
func WithBackoff(base, max time.Duration) Option {
	return optionFunc(func(c *config) {
		if base > 0 {
			c.base = base
		}
		if max > 0 {
			c.max = max
		}
	})
}

// WithRetryOn sets the class of errors that are retried (default
// [Retryable]). A nil class keeps the default.
func WithRetryOn(class Class) Option {
	return optionFunc(func(c *config) {
		if class != nil {
			c.on = class
		}
	})
}

// WithFallback adds models to fall back on, tried in order once the
// models before them failed (see [Fallback]). A fallback without a model
// is ignored.
func WithFallback(fallbacks ...Fallback) Option {
	return optionFunc(func(c *config) {
		for _, f := range fallbacks {
			if f.Model == nil {
				continue
			}
			if f.On == nil {
				f.On = Retryable
			}
			c.fallbacks = append(c.fallbacks, f)
		}
	})
}

// WithSleep sets how the middleware waits between attempts (default: a
// timer that stops early with ctx's error when ctx is done). Tests use it
// to run without waiting. A nil func keeps the default.
func WithSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.sleep = f
		}
	})
}

// WithClock sets the clock the context's deadline is compared with
// (default time.Now). A nil func keeps the default.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(c *config) {
		if now != nil {
			c.now = now
		}
	})
}

// WithRandom sets the source of the jitter, a func returning a number in
// [0, 1) (default math/rand/v2.Float64). A nil func keeps the default.
func WithRandom(f func() float64) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.random = f
		}
	})
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
