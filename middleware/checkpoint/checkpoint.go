package checkpoint

import (
	"context"
	"errors"
	"sync"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Checkpointer keeps the checkpoint of every run it serves in a
// [state.Store], ahead of the run's session, so that a worker that dies at
// any instant leaves a checkpoint that any other worker can resume without
// running a tool under a new idempotency key, asking the model again for
// an answer already stored, or failing on a session that holds more than
// the checkpoint. See the package documentation for what it saves, when,
// and why.
//
// Wire it with one call: [Checkpointer.Middleware] in the runner's chain
// (the Checkpoint field of [pipeline.Stack]); with [WithSession], that
// middleware persists runs to a session store too. A Checkpointer is safe
// for concurrent use: one serves every run of a runner, and any number of
// runners.
type Checkpointer struct {
	store   state.Store
	cfg     config
	session session.Store       // the session store of WithSession, or nil
	persist pipeline.Middleware // persistence over the write-ahead store, or zero
	lister  state.Lister        // the store's listing, under KeepLast and KeepFor
	done    finishTimes         // runs known committed, under KeepLast and KeepFor
}

// New returns a checkpointer that saves into store. It panics if store is
// nil, if [WithSession] gives a nil session store, or if the retention of
// [WithRetention] is [KeepLast] or [KeepFor] and store does not implement
// [state.Lister].
func New(store state.Store, opts ...Option) *Checkpointer {
	if store == nil {
		panic("checkpoint: New called with a nil state.Store")
	}
	c := &Checkpointer{store: store, cfg: newConfig(opts)}
	if k := c.cfg.retention.kind; k == keepLast || k == keepFor {
		l, ok := store.(state.Lister)
		if !ok {
			panic("checkpoint: KeepLast and KeepFor need a state.Store that implements state.Lister")
		}
		c.lister = l
	}
	if c.cfg.hasSessions {
		if c.cfg.sessions == nil {
			panic("checkpoint: WithSession called with a nil session.Store")
		}
		c.session = c.cfg.sessions
		c.persist = persistence.Middleware(ahead(c.session, c), c.cfg.persist...)
	}
	return c
}

// Atomic reports whether each checkpoint save and the session append it
// guards are one transaction: the session store of [WithSession] is the
// checkpointer's state store, the same value or a wrapper of it that
// passes SaveAppend through (session/branch's Store), and offers a
// save-and-append.
// Otherwise the save is made first and the append after it, which is still
// crash-safe (see the package documentation) at one more durable write.
func (c *Checkpointer) Atomic() bool {
	if c.session == nil {
		return false
	}
	_, ok := (&aheadSession{Store: c.session, c: c}).atomic()
	return ok
}

// retryable reports whether c may run again under a new call ID after a
// crash (see [WithRetryableTools]).
func (c *Checkpointer) retryable(tc *pipeline.ToolCall) bool {
	return c.cfg.retryable != nil && c.cfg.retryable(tc)
}

// Store returns the state store the checkpointer saves into.
func (c *Checkpointer) Store() state.Store { return c.store }

// live is a run this checkpointer serves in this process: the run stage
// puts it in the run's context.
type live struct {
	c   *Checkpointer
	run *state.Run

	mu    sync.Mutex // one save at a time, in order
	saved bool       // saved since this invocation began
	lost  error      // the conflict that lost the run; every later save fails with it
	sw    handoff    // an agent switch made ahead of its commit
}

// handoff is an agent switch the turn stage made before the turn's
// commit, undone if that commit fails.
type handoff struct {
	turn int    // the turn that decided it; 0 for none
	undo func() // switches the run back (see pipeline.Turn.ApplyNext)
}

type liveKey struct{}

// liveFrom returns the live run of ctx if this checkpointer serves run.
func (c *Checkpointer) liveFrom(ctx context.Context, run *state.Run) (*live, bool) {
	lr, ok := ctx.Value(liveKey{}).(*live)
	if !ok || lr.c != c || lr.run != run {
		return nil, false
	}
	return lr, true
}

// save saves the live run. After a conflict the run is lost to another
// worker: save writes nothing more and returns the conflict.
func (lr *live) save(ctx context.Context, stage Stage) error {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.saveLocked(ctx, stage)
}

func (lr *live) saveLocked(ctx context.Context, stage Stage) error {
	if lr.lost != nil {
		return lr.lost
	}
	if !lr.saved {
		stage = StageClaim // the first save of an invocation claims the run
	}
	if err := lr.c.store.Save(ctx, lr.run); err != nil {
		serr := &SaveError{RunID: lr.run.ID(), Stage: stage, Err: err}
		if errors.Is(err, state.ErrConflict) {
			lr.lost = serr
		}
		return serr
	}
	lr.saved = true
	return nil
}

// Middleware returns the checkpointer's run, turn and tool stages. Put it
// in the chain right inside the persistence middleware (see the package
// documentation): tracing → logging → persistence → checkpoint → approval
// → guardrails.
//
// The run stage claims a resumed run before anything runs (a save with
// compare-and-swap on the version it was loaded at) and saves the run when
// it returns. The turn stage claims a new run on its first turn, with its
// input, and records a turn's final output or handoff in the run before
// the turn's commit. The tool stage saves a response before its tools run.
// A save that fails stops the run: the turn, tool call or append it guards
// returns a [*SaveError].
//
// A run started from inside a run this checkpointer serves (an agent used
// as a tool, [pipeline.AgentTool]) is not checkpointed on its own: its
// state travels in the outer run's checkpoint.
func (c *Checkpointer) Middleware() pipeline.Middleware {
	own := c.middleware()
	if c.session == nil {
		return own
	}
	return pipeline.Chain(c.persist, own)
}

// middleware is the checkpointer's own stages, without persistence.
func (c *Checkpointer) middleware() pipeline.Middleware {
	return pipeline.Middleware{
		Name: "checkpoint",
		Run:  func(next pipeline.RunHandler) pipeline.RunHandler { return &runHandler{c: c, next: next} },
		Turn: func(next pipeline.Handler) pipeline.Handler { return &turnHandler{c: c, next: next} },
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler { return &toolHandler{c: c, next: next} },
	}
}

type runHandler struct {
	c    *Checkpointer
	next pipeline.RunHandler
}

type turnHandler struct {
	c    *Checkpointer
	next pipeline.Handler
}

type toolHandler struct {
	c    *Checkpointer
	next pipeline.ToolHandler
}

var (
	_ pipeline.RunHandler  = (*runHandler)(nil)
	_ pipeline.Handler     = (*turnHandler)(nil)
	_ pipeline.ToolHandler = (*toolHandler)(nil)
)

// ServeRun claims a resumed run, serves it, and saves it when it returns.
func (h *runHandler) ServeRun(ctx context.Context, rc *pipeline.RunCall) (*pipeline.Result, error) {
	if outer, ok := ctx.Value(liveKey{}).(*live); ok && outer.c == h.c {
		return h.next.ServeRun(ctx, rc) // a nested run: it travels in the outer checkpoint
	}
	lr := &live{c: h.c, run: rc.Run}
	if rc.Resumed {
		if err := lr.save(ctx, StageClaim); err != nil {
			return nil, staleClaim(err)
		}
	}
	res, err := h.next.ServeRun(context.WithValue(ctx, liveKey{}, lr), rc)
	if h.c.cfg.retention.kind == keepFor && committed(rc.Run) {
		h.c.stampFinished(rc.Run) // saved by the end save
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.c.cfg.detachedTimeout)
	defer cancel()
	serr := lr.save(sctx, StageEnd)
	if serr != nil && !errors.Is(err, serr) {
		err = errors.Join(err, serr)
	}
	if err == nil && serr == nil && h.c.cfg.retention != KeepAll && committed(rc.Run) {
		h.c.prune(sctx, rc.Run)
	}
	return res, err
}

// committed reports whether run finished and its final commit is in the
// session: no commit record is left for Resume to complete.
func committed(run *state.Run) bool {
	if _, done := run.FinalOutput(); !done {
		return false
	}
	_, pending := run.Extension(extensionKey)
	return !pending
}

// staleClaim marks the conflict of a resumed run's claim as stale: the
// store holds a newer version, so the state the caller resumes is behind
// what the run already did ([state.ErrStale]); it still wraps
// [state.ErrConflict].
func staleClaim(err error) error {
	se, ok := errors.AsType[*SaveError](err)
	if !ok {
		return err
	}
	return &SaveError{RunID: se.RunID, Stage: se.Stage, Err: state.StaleConflict(se.Err)}
}

// turnSave makes the save before a response's tools run once per turn.
type turnSave struct {
	lr   *live
	once sync.Once
	err  error
}

type turnSaveKey struct{}

// ServeTurn claims a new run on its first turn and records the turn's
// decision in the run before the turn's commit.
func (h *turnHandler) ServeTurn(ctx context.Context, t *pipeline.Turn) error {
	lr, ok := h.c.liveFrom(ctx, t.Run)
	if !ok {
		return h.next.ServeTurn(ctx, t)
	}
	lr.mu.Lock()
	lr.sw = handoff{}
	var err error
	if !lr.saved && !heldInput(ctx, t) {
		err = lr.saveLocked(ctx, StageClaim) // a new run without a session append yet
	}
	lr.mu.Unlock()
	if err != nil {
		return err
	}
	err = h.next.ServeTurn(context.WithValue(ctx, turnSaveKey{}, &turnSave{lr: lr}), t)
	if err != nil {
		return err
	}
	switch t.Next.Kind {
	case pipeline.NextFinalOutput:
		// Saved with the final commit: a crash after it must not make
		// resume ask the model again.
		t.ApplyNext()
	case pipeline.NextHandoff:
		if t.Next.Agent != nil && t.Next.Agent.Name != t.Run.Agent() {
			undo := t.ApplyNext() // saved with the turn's commit, like a final output
			lr.mu.Lock()
			lr.sw = handoff{turn: t.Number, undo: undo}
			lr.mu.Unlock()
		}
	}
	return nil
}

// heldInput reports whether an input guardrail holds the input of a new
// run's first turn until it ruled on it ([pipeline.InputHold]): the claim
// then waits for the first save after the ruling (before the held input's
// append, before a tool runs, or at the end), so that a blocked input the
// ruling takes out of the run never reaches the store. Nothing of the run
// is in the session or done before that save, so a crash before it leaves
// a run to start again.
func heldInput(ctx context.Context, t *pipeline.Turn) bool {
	return t.Number == 1 && !t.Resumed && pipeline.InputHoldFrom(ctx) != nil
}

// CallTool saves the response before its first call runs, unless that
// call is retryable (then the first other call makes the save).
func (h *toolHandler) CallTool(ctx context.Context, tc *pipeline.ToolCall) (*pipeline.ToolResult, error) {
	ts, ok := ctx.Value(turnSaveKey{}).(*turnSave)
	if ok && !tc.Resumed && ts.lr.c == h.c && ts.lr.run == tc.Turn.Run && !h.c.retryable(tc) {
		ts.once.Do(func() { ts.err = ts.lr.save(ctx, StageTools) })
		if ts.err != nil {
			return nil, ts.err
		}
	}
	return h.next.CallTool(ctx, tc)
}
