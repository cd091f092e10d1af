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
	limit      int
	merge      MergeFunc
	byRef      bool
	cont       bool
	cacheBytes int64 // 0: session.DefaultCacheBytes; below 0: no cache
}

func newConfig(opts []Option) *config {
	c := &config{byRef: true}
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

// WithHistoryCache sets the memory budget, in bytes of items, of the
// middleware's cache of session histories ([session.Cache]): a run's first
// turn reads its history through it, so the next message of a
// conversation decodes only the items written since the last one was
// read, by this process or any other. The cache is on by default, with
// [session.DefaultCacheBytes], for stores that read changes
// ([session.ChangeReader]: the memory, SQLite, PostgreSQL and Redis
// stores, and session/encrypt's wrappers of them); maxBytes 0 keeps the default and maxBytes below 0 turns it off.
// A later call replaces an earlier one.
func WithHistoryCache(maxBytes int64) Option {
	return optionFunc(func(c *config) { c.cacheBytes = maxBytes })
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

// WithHistoryCopied makes each run's first checkpoint save copy the
// session history the run started from, instead of referring to it (the
// default: see [WithHistoryByReference]). A checkpoint then holds its
// run's whole model input and resumes whatever became of the session
// (popped, cleared, or another store), at the cost of a first save that
// grows with the conversation, and of storage that grows with the
// conversation times its runs. A later [WithHistoryByReference] undoes
// it.
func WithHistoryCopied() Option {
	return optionFunc(func(c *config) { c.byRef = false })
}

// WithHistoryByReference makes each run's checkpoints refer to the session
// history the run started from instead of copying it (see
// [state.Run.HistoryRef]): the session, how many of its items
// before the run, the session's write stamp when they were read
// ([session.History]), and their digest. It is the default; the option
// undoes an earlier [WithHistoryCopied]. A checkpoint then costs O(the
// run's own items) whatever the conversation's length, and the storage of
// a conversation grows with the conversation, not with the conversation
// times its runs. A resume reads the history back from the session
// ([session.Store.ListBefore]: the items before the run's own written
// before the stamp) and checks the digest, so it gives the model exactly
// the input the live run had, even after later runs, or an earlier run
// that went on (a paused run approved after the next message), wrote to
// the session.
//
// The history must still be in the session when the run resumes: if it
// was popped or cleared since, resuming fails with
// [state.ErrHistoryChanged] before anything runs (a [*state.HistoryError]),
// never with another input. Use [WithHistoryCopied] where a session's
// items may be removed while runs of it are paused. Ignored with
// [WithMerge], whose history is the merge function's own.
func WithHistoryByReference() Option {
	return optionFunc(func(c *config) { c.byRef = true })
}

// WithContinuation makes the session remember where its conversation
// stands, so that the next run continues from there instead of starting
// from the whole history: when a run finishes, persistence records the ID
// of its last model response and, when a compaction middleware bounded
// what the model sees ([pipeline.View]), the boundary, in marks kept
// beside the session (see the package documentation, # Continuation).
//
// On the next run's first turn, if the marks still hold for the session:
//   - after a compaction, the run reads only the session's items after the
//     boundary, and the model sees the boundary's items (a summary, the
//     Responses API's compaction item) followed by them;
//   - the run carries a [pipeline.Continuation]: a model adapter that
//     chains responses on its server (model/openai's ChainResponses)
//     sends previous_response_id and only the run's own items.
//
// Marks that no longer hold (the session was popped or cleared, or a run
// without this option wrote to it) are ignored, and the run reads the
// history as it would without the option. The marks live in two sessions
// of the same store named after the session ("<id>#turnkit.tip" and
// "<id>#turnkit.boundary"), one small item each, replaced as the
// conversation goes on; clearing a session leaves them, ignored, and a
// user clears them with the session's Clear on those names. Every run of a session
// must use the same option. Ignored with [WithMerge].
func WithContinuation() Option {
	return optionFunc(func(c *config) { c.cont = true })
}
