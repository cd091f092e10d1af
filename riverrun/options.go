package riverrun

import "time"

// An Option configures [NewWorker].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	timeout   time.Duration
	retryable func(error) bool
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithTimeout sets the timeout of a run's job attempt, after which River
// cancels its context (the run is saved as far as it got, and the job
// retries, resuming it). The default, 0, is the client's JobTimeout
// (River's default is one minute). Keep it below the client's
// RescueStuckJobsAfter, the time after which River takes a running job's
// worker for dead: a live attempt then stops before its job is handed to
// another worker. -1 means no timeout, and then River's rescuer never
// rescues the job of a dead worker: do not use it for runs. A later call
// replaces an earlier one.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.timeout = d })
}

// WithRetryable adds errors that make a run's job retry instead of fail:
// f reports whether err (the run's error) is transient, such as a
// session store's I/O error. Errors the worker retries anyway stay
// retried. A nil f is ignored; a later call replaces an earlier one.
func WithRetryable(f func(err error) bool) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.retryable = f
		}
	})
}
