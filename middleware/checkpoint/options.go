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
	now             func() time.Time
	sessions        session.Store
	persist         []persistence.Option
	hasSessions     bool
}

// defaultDetachedTimeout bounds the saves made after a run's context is
// done.
const defaultDetachedTimeout = 30 * time.Second

func newConfig(opts []Option) config {
	c := config{detachedTimeout: defaultDetachedTimeout, now: time.Now}
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
// every retention: it is what resumes it. The zero Retention is [KeepAll].
// Retentions are comparable values.
type Retention struct {
	kind retentionKind
	n    int           // keepLast: the finished runs kept per session
	d    time.Duration // keepFor: how long a finished run is kept
}

type retentionKind uint8

const (
	keepAll retentionKind = iota
	deleteFinished
	keepLast
	keepFor
)

var (
	// KeepAll keeps every checkpoint (the default): a finished run's
	// checkpoint holds its items, its result and its claim on the run ID,
	// so a second start of the same ID fails with [state.ErrConflict].
	KeepAll = Retention{}
	// DeleteFinished deletes a run's checkpoint when the run returns
	// finished with its final commit in the session (or finished without
	// a session: its caller has the result). Everything the run
	// did is in the session, so what is stored grows with the
	// conversation alone; the run ID is no longer claimed, so starting the
	// same ID again starts a new run (a job queue's uniqueness, such as
	// River's, guards that). A delete that fails leaves the checkpoint, as
	// KeepAll would, and does not fail the run.
	DeleteFinished = Retention{kind: deleteFinished}
)

// KeepLast keeps the checkpoints of the n newest finished runs of each
// session (newest by their first save, as a [state.Lister] orders them)
// and deletes older finished ones: when a run returns finished with its
// final commit in the session, the checkpointer lists its session's
// finished runs and deletes those after the first n. So what is stored
// is the session plus n finished checkpoints, whatever the length of the
// conversation, and the last n runs stay readable (by the inspector,
// say). A run without a session is kept. n < 1 is [DeleteFinished].
//
// The store given to [New] must implement [state.Lister]. The listing
// reads at most n+1 summaries when one run finishes at a time; a delete
// or a listing that fails leaves the checkpoints for the next finished
// run to prune, and does not fail the run.
func KeepLast(n int) Retention {
	if n < 1 {
		return DeleteFinished
	}
	return Retention{kind: keepLast, n: n}
}

// KeepFor keeps a finished run's checkpoint for at least d after the run
// finished, by the clock of [WithClock], and deletes it afterwards: each
// run that returns finished with its final commit in the session records
// when it finished in its checkpoint (under the extension key
// "turnkit.retention"), and deletes the finished runs of its session
// whose record is older than d. A run without a session is kept, and so
// is a finished run without a record (saved by an earlier version or
// under another retention). d <= 0 is [DeleteFinished].
//
// The store given to [New] must implement [state.Lister]. The prune walks
// the session's finished runs from the oldest first save and stops at the
// first one it keeps, so a run finished late (paused for long) keeps
// the runs after it until it goes: a checkpoint may outlive d, never the
// other way round. Finding when a run finished reads its checkpoint,
// unless this checkpointer saved or read it before (it remembers a bounded
// number of them); the listing reads every finished run kept in the
// session, one page per [state.MaxRunLimit].
func KeepFor(d time.Duration) Retention {
	if d <= 0 {
		return DeleteFinished
	}
	return Retention{kind: keepFor, d: d}
}

// WithRetention sets what becomes of finished runs' checkpoints; the
// default is [KeepAll]. A later call replaces an earlier one. [New]
// panics if r is [KeepLast] or [KeepFor] and its store does not
// implement [state.Lister].
func WithRetention(r Retention) Option {
	return optionFunc(func(c *config) { c.retention = r })
}

// WithClock sets the clock [KeepFor] reads; the default is time.Now, and
// nil keeps it. A later call replaces an earlier one. Tests give a clock
// they move by hand.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(c *config) {
		if now != nil {
			c.now = now
		}
	})
}
