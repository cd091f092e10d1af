package checkpoint

import (
	"time"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
)

// An Option configures [New].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	detachedTimeout time.Duration
	retryable       func(c *pipeline.ToolCall) bool
	retention       Retention
	sessions        session.Store
	persist         []persistence.Option
	hasSessions     bool
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

// WithSession makes the checkpointer's [Checkpointer.Middleware] persist
// runs to the session store sessions as well: it includes the persistence
// middleware ([persistence.Middleware] with opts), placed outside the
// checkpointer and writing through it, so that a checkpoint save precedes
// every session append. This is the one way to wire a checkpointer with
// persistence; give [New] a single WithSession.
//
// When sessions is the same value as the state store given to New and
// offers a save-and-append in one transaction (session/sqlite,
// session/postgres and session/redis do), each save and the append it
// guards are one transaction; a wrapped store must be given as both and
// must forward that method. [Checkpointer.Atomic] reports which applies.
//
// [New] panics if sessions is nil. A later WithSession replaces an
// earlier one: a checkpointer serves one session store.
func WithSession(sessions session.Store, opts ...persistence.Option) Option {
	return optionFunc(func(c *config) {
		c.sessions = sessions
		c.persist = opts
		c.hasSessions = true
	})
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

// WithRetryableTools names the calls that may run again under a new call
// ID after a crash: calls of read-only tools, and of tools whose effect a
// repeat with the same arguments does not change (MCP's readOnlyHint and
// idempotentHint annotations say so; see tool/mcp.Retryable). The
// checkpointer skips its save before such a call runs (the "tools" save,
// [StageTools]), which exists only so that a call retried after a crash
// keeps its call ID and hence its idempotency key. A response whose calls
// are all retryable then costs one durable write fewer; one with another
// call still makes the save, when that call starts.
//
// What a crash does to a retryable call: if the worker dies after the call
// ran but before its output was committed, the checkpoint does not hold
// the response that asked for it, so resume asks the model again, and the
// call may run again under a new call ID. Nothing reaches the session
// twice: the lost response was never committed. A call whose output was
// committed is in the checkpoint (every append is preceded by a save) and
// is not run again.
//
// retryable is called once for each call about to run in a run the
// checkpointer serves, before it runs; never for a resumed call (one that
// waited for a decision), whose response the checkpoint already holds. It
// must be safe for concurrent use: the calls of a response run at once. A later WithRetryableTools replaces an earlier one; nil
// makes every call need the save (the default).
func WithRetryableTools(retryable func(c *pipeline.ToolCall) bool) Option {
	return optionFunc(func(c *config) { c.retryable = retryable })
}

// A Retention says what becomes of a run's checkpoint once the run has
// finished and its final commit is in the session (see [WithRetention]).
// A run that is paused, failed or unfinished keeps its checkpoint under
// every retention: it is what resumes it.
type Retention int

const (
	// KeepAll keeps every checkpoint (the default): a finished run's
	// checkpoint holds its items, its result and its claim on the run ID,
	// so a second start of the same ID fails with [state.ErrConflict].
	KeepAll Retention = iota
	// DeleteFinished deletes a run's checkpoint when the run returns
	// finished with its final commit in the session (or finished without
	// a session: its caller has the result). Everything the run
	// did is in the session, so what is stored grows with the
	// conversation alone; the run ID is no longer claimed, so starting the
	// same ID again starts a new run (a job queue's uniqueness, such as
	// River's, guards that). A delete that fails leaves the checkpoint, as
	// KeepAll would, and does not fail the run.
	DeleteFinished
)

// WithRetention sets what becomes of finished runs' checkpoints; the
// default is [KeepAll]. Retention by age or by count per session (keep
// the last N) needs a listing of checkpoints by session and time, which
// [state.Store] does not offer yet.
func WithRetention(r Retention) Option {
	return optionFunc(func(c *config) { c.retention = r })
}
