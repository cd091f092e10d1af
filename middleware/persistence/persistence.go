package persistence

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// WithheldOutput is the output stored in place of a terminal tool's output
// when the turn's model output was rejected (an output guardrail tripped)
// or abandoned (the run was cancelled before the verdict): the session
// shows that the tool ran without keeping what it returned.
const WithheldOutput = "Output withheld by an output guardrail."

// Middleware returns the session persistence middleware. It stores the
// items of every run that names a session ([pipeline.WithSessionID]) in
// store; runs without a session pass through untouched.
//
// On a run's first turn it reads the session's history (see [WithLimit]
// and [WithMerge]; without a merge, through a cache, [WithHistoryCache],
// decoding only what was written since this middleware last read the
// session), makes it
// the context the model sees before the input,
// and appends the run's input at once: accepted input is kept even if the
// run fails later. History that was read is never appended again. An
// input guardrail that rules on a blocked input ([pipeline.InputHold])
// defers that append to the return of the first model stage, before any
// tool commits, and decides what it stores.
//
// Tool side effects commit at once: when a tool returns, its call and
// output are appended before any later stage runs, with the earlier items
// of the response that are not held back. The model output of a turn that
// can end the run ([pipeline.Turn.MayEndRun]: its messages, a terminal
// call and its output) is held back until the turn returns, and then:
//   - on success, or a guardrail failure ([pipeline.ErrGuardrailFailed]),
//     every item of the turn not yet stored is appended;
//   - on an output tripwire ([pipeline.ErrOutputRejected]) the held
//     messages are discarded, the tool items already committed stay, and a
//     terminal call is stored with [WithheldOutput] as its output;
//   - on cancellation, an input tripwire or any other error, no model
//     output is appended.
//
// A call waiting for approval is stored only with its outcome, at its
// position. Every item lands at its position (Seq), so the session lists
// a run's items in model output order whatever order they were committed
// in. Reasoning is stored with the first stored item that follows it.
//
// On resume only what the session does not hold is appended (the state
// keeps a watermark, and appends are idempotent on run ID and Seq). Before
// an approved call runs on resume, the session is asked whether its output
// is already committed; if so that output is the call's result and the tool
// does not run again.
//
// A stale state is refused, not merged: before anything of a resumption
// runs, the session is asked for the positions the state has not settled.
// If it holds an item of the run at or beyond the state's next free
// position, a different item where the state recorded one, or the outcome
// of a call the state holds for a decision it has not made, another state
// of the run (a sibling taken from the same result, a newer checkpoint)
// went on: resume fails with a [*state.StaleError] ([state.ErrStale]),
// before any model call or tool, and the state is unchanged. A committed
// output is reused only where the state itself reserved it for that call
// and under the state's own decision, so an output another state's
// decision produced never passes this state's approval gate.
//
// A failed append returns an [*AppendError] (joined with the turn's own
// error, if any) and leaves the run's state resumable: the turn's results
// are in it, and resuming appends what the session is missing, once.
//
// # Ordering
//
// Put persistence outside approval and the guardrails: it must see the
// guardrails' verdict before it commits a final turn, and store what the
// inner stages made of a tool call (a rejection, a replaced output).
//
// Middleware panics if store is nil. The middleware is safe for concurrent
// use; it keeps per-turn data on the turn's context.
func Middleware(store session.Store, opts ...Option) pipeline.Middleware {
	if store == nil {
		panic("persistence: Middleware called with a nil session.Store")
	}
	h := &handler{store: store, cfg: newConfig(opts)}
	h.history = session.Store(store)
	if h.cfg.cacheBytes >= 0 {
		if _, ok := store.(session.ChangeReader); ok {
			h.history = session.NewCache(store, h.cfg.cacheBytes)
		}
	}
	return pipeline.Middleware{
		Name:  "persistence",
		Run:   func(next pipeline.RunHandler) pipeline.RunHandler { return &runHandler{handler: h, next: next} },
		Turn:  func(next pipeline.Handler) pipeline.Handler { return &turnHandler{handler: h, next: next} },
		Tool:  func(next pipeline.ToolHandler) pipeline.ToolHandler { return &toolHandler{handler: h, next: next} },
		Model: func(next pipeline.Model) pipeline.Model { return &modelHandler{handler: h, next: next} },
	}
}

// handler holds what every stage shares; it is read-only after
// construction.
type handler struct {
	store   session.Store
	history session.Store // reads a run's history: the store, or a cache of it
	cfg     *config
}

type runHandler struct {
	*handler
	next pipeline.RunHandler
}

type turnHandler struct {
	*handler
	next pipeline.Handler
}

type toolHandler struct {
	*handler
	next pipeline.ToolHandler
}

type modelHandler struct {
	*handler
	next pipeline.Model
}

var (
	_ pipeline.Model       = (*modelHandler)(nil)
	_ pipeline.RunHandler  = (*runHandler)(nil)
	_ pipeline.Handler     = (*turnHandler)(nil)
	_ pipeline.ToolHandler = (*toolHandler)(nil)
)

// ServeRun completes, when a run resumes, what its settled turns left
// unstored: the appends a crash or a failed write cut off after the turn's
// outcome was decided and saved in the run's state (a tripwire's withheld
// terminal pair, say). It runs before anything inside it, so a run that an
// inner stage refuses to resume (a guardrail that tripped refuses again)
// still gets its session completed. A paused response, whose calls wait
// for their outcome, is left to its resumed turn. Before all of it, a
// state that is behind the session is refused (see [ledger.fresh]).
func (h *runHandler) ServeRun(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
	run := c.Run
	sid := run.SessionID()
	if sid == "" {
		return h.next.ServeRun(ctx, c)
	}
	if !c.Resumed {
		return h.serveRun(ctx, c, nil)
	}
	ext, err := loadExt(run)
	if err != nil {
		return nil, err
	}
	if err := h.resolveHistory(ctx, run); err != nil {
		return nil, err
	}
	l := newLedger(h.handler, run, nil, sid, ext)
	if err := l.fresh(ctx); err != nil {
		return nil, err
	}
	if !paused(run) {
		if err := l.append(ctx, l.collect(run.NextSeq())); err != nil {
			return nil, err
		}
	}
	return h.serveRun(ctx, c, l)
}

// serveRun runs next with the run's ledger, l or a new one, on its
// context: the run's turns take it in turn (see [runLedger]), so a turn
// allocates none. With WithContinuation, it then records where the session
// stands once the run finished.
func (h *runHandler) serveRun(ctx context.Context, c *pipeline.RunCall, l *ledger) (*pipeline.Result, error) {
	if l == nil {
		l = newLedger(h.handler, c.Run, nil, c.Run.SessionID(), extState{})
	}
	res, err := h.next.ServeRun(l.withLedger(ctx), c)
	if err != nil || !h.cfg.cont || h.cfg.merge != nil || res == nil {
		return res, err
	}
	if _, done := c.Run.FinalOutput(); !done {
		return res, nil
	}
	return res, h.writeMarks(ctx, c.Run, res.LastResponseID())
}

// paused reports whether the run's current response has a call without
// an outcome: the resumed turn will run it, and owns the response's items.
func paused(run *state.Run) bool {
	b := run.Response()
	for seq := b.Start; seq < b.End; seq++ {
		if it, ok := run.ItemAt(seq); ok && it.Kind().IsCall() {
			if _, done := run.Answered(it); !done {
				return true
			}
		}
	}
	return false
}

// ServeTurn persists the turn around next.
func (h *turnHandler) ServeTurn(ctx context.Context, t *pipeline.Turn) error {
	run := t.Run
	sid := run.SessionID()
	if sid == "" {
		return h.next.ServeTurn(ctx, t)
	}
	ext, err := loadExt(run)
	if err != nil {
		return err
	}
	if l, ok := runLedger(ctx, run, sid); ok {
		l.reset(t, ext)
		err := h.serveTurn(ctx, t, l)
		l.release()
		return err
	}
	l := newLedger(h.handler, run, t, sid, ext)
	return h.serveTurn(l.withLedger(ctx), t, l)
}

// serveTurn persists turn t around next with its ledger l, which ctx
// carries.
func (h *turnHandler) serveTurn(ctx context.Context, t *pipeline.Turn, l *ledger) error {
	run, sid := t.Run, l.sid
	first := t.Number == 1 && !t.Resumed
	if first && h.cfg.merge != nil {
		if err := h.loadHistory(ctx, run, sid, t.Input); err != nil {
			return err
		}
	}
	// Append what earlier turns left unstored: the input, and after a
	// failed append whatever the session is missing. A resumed turn's own
	// response is the turn's business.
	upTo := run.NextSeq()
	if t.Resumed {
		upTo = run.Response().Start
	}
	if first && len(t.Input) > 0 {
		if l.hold = pipeline.InputHoldFrom(ctx); l.hold != nil {
			// An input guardrail rules on the input first (see
			// settleInput): it is stored once the model stage returned.
			upTo = t.Input[0].Seq()
		}
	}
	if first && h.cfg.merge == nil {
		// Read before the input is placed, so that the first save (which
		// places it) already holds the history or its reference: a crash
		// after that save must not resume the run without its history.
		// The run is not placed yet, so ListBefore reads every item, and
		// the read's stamp keeps out what another run writes after it:
		// the same items as a read after the input is placed.
		if err := h.loadSessionHistory(ctx, run, sid); err != nil {
			return err
		}
	}
	if err := l.append(ctx, l.collect(upTo)); err != nil {
		return err
	}
	if l.ext.Next != nil {
		return l.replay(t)
	}
	err := h.next.ServeTurn(ctx, t)
	if serr := l.settleInput(ctx, t); serr != nil && serr != l.err {
		err = errors.Join(err, serr) // an append failure is l.err, which finish reports
	}
	return l.finish(ctx, t, err)
}

// Respond stores a held input as soon as the model stage inside returned,
// before anything of the response is placed, so the session is still a
// valid prefix of the run when the first tool commits.
func (h *modelHandler) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	resp, err := h.next.Respond(ctx, c)
	if t := c.Turn; t == nil || t.Number != 1 || t.Resumed {
		return resp, err // only a run's first turn holds its input
	}
	if l, ok := ctx.Value(ledgerKey{}).(*ledger); ok && l.turn == c.Turn {
		if serr := l.settleInput(ctx, c.Turn); serr != nil && err == nil {
			return nil, serr
		}
	}
	return resp, err
}

// CallTool commits the call and its output when the tool returns.
func (h *toolHandler) CallTool(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
	l, ok := ledgerFrom(ctx, c)
	if !ok {
		return h.next.CallTool(ctx, c)
	}
	if c.Resumed {
		if res, done, err := l.lookup(ctx, c, h.next); err != nil || done {
			return res, err
		}
	}
	res, err := h.next.CallTool(ctx, c)
	if err != nil || res == nil || c.Terminal {
		return res, err // a terminal call is model output: it waits for the verdict
	}
	if res.Status == pipeline.ToolCompleted || res.Status == pipeline.ToolRejected {
		l.commitCall(ctx, c, res)
	}
	return res, nil
}

// loadSessionHistory reads the session's items before the run (the last
// WithLimit of them) and makes them the run's context; by reference unless
// WithHistoryCopied.
func (h *handler) loadSessionHistory(ctx context.Context, run *state.Run, sid string) error {
	if h.cfg.cont {
		if ok, err := h.loadContinued(ctx, run, sid); err != nil || ok {
			return err
		}
	}
	hist, err := h.history.ListBefore(ctx, sid, run.ID(), session.HistoryQuery{Limit: h.cfg.limit})
	if err != nil {
		return &LoadError{SessionID: sid, RunID: run.ID(), Err: err}
	}
	if h.cfg.limit > 0 {
		hist.Items = trimOrphans(hist.Items)
	}
	return h.setHistory(run, hist)
}

// resolveHistory reads the history a resumed run's checkpoint refers to
// (see [state.Run.HistoryRef]) from the session, before anything of the
// run goes on; a session that no longer holds it fails with a
// [*state.HistoryError] wrapping [state.ErrHistoryChanged].
func (h *handler) resolveHistory(ctx context.Context, run *state.Run) error {
	sid, n, pending, _ := run.HistoryRef()
	if !pending {
		return nil
	}
	var hist session.History
	if n > 0 {
		var err error
		q := session.HistoryQuery{Limit: n, Stamp: run.HistoryStamp()}
		if hist, err = h.store.ListBefore(ctx, sid, run.ID(), q); err != nil {
			return &LoadError{SessionID: sid, RunID: run.ID(), Err: err}
		}
	}
	return run.ResolveHistory(hist.Items)
}

func (h *handler) loadHistory(ctx context.Context, run *state.Run, sid string, input []state.Item) error {
	hist, err := h.store.List(ctx, sid, h.cfg.limit)
	if err != nil {
		return &LoadError{SessionID: sid, RunID: run.ID(), Err: err}
	}
	if h.cfg.limit > 0 {
		hist = trimOrphans(hist)
	}
	if h.cfg.merge != nil {
		if hist, err = h.cfg.merge(ctx, hist, input); err != nil {
			return fmt.Errorf("persistence: merge session %q history for run %s: %w", sid, run.ID(), err)
		}
	}
	if len(hist) > 0 {
		return runcore.SetHistory(run, hist)
	}
	return nil
}

// trimOrphans drops what a limit cut off from its call: outputs at the
// start of the history whose call is not in it, and reasoning before them,
// so the history stays valid model input.
func trimOrphans(hist []state.Item) []state.Item {
	calls := make(map[string]bool)
	from := 0
	for i, it := range hist {
		switch {
		case it.Kind().IsCall():
			calls[it.CallID()] = true
		case it.Kind().IsOutput() && !calls[it.CallID()]:
			from = i + 1
		}
	}
	return hist[from:]
}

// finish commits what the turn's outcome allows and reports append
// failures with the turn's own error.
func (l *ledger) finish(ctx context.Context, t *pipeline.Turn, err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil, errors.Is(err, pipeline.ErrGuardrailFailed):
		_ = l.append(ctx, l.collect(l.run.NextSeq()))
		if l.err != nil && err == nil {
			if serr := l.saveNext(t); serr != nil {
				return errors.Join(l.err, serr)
			}
		}
	case errors.Is(err, pipeline.ErrOutputRejected):
		if serr := l.settleHeld(t); serr != nil {
			return errors.Join(err, serr)
		}
		_ = l.append(ctx, l.collect(l.run.NextSeq()))
	default:
		// Cancelled, an input tripwire, or a failure: no model output. A
		// response whose calls all have outcomes will not be resumed, so
		// its held output never gets a verdict; a response with open calls
		// is finished by the resumed turn.
		if t.Response != nil && !l.openCalls(t) {
			if serr := l.settleHeld(t); serr != nil {
				return errors.Join(err, serr)
			}
		}
	}
	switch {
	case l.err == nil:
		return err
	case err == nil, err == l.err:
		return l.err
	}
	return errors.Join(err, l.err)
}

// saveNext records the decision of a turn whose commit failed, so that
// resume replays it once the commit is complete instead of asking the
// model again.
func (l *ledger) saveNext(t *pipeline.Turn) error {
	switch t.Next.Kind {
	case pipeline.NextFinalOutput:
		l.ext.Next = &savedNext{Kind: t.Next.Kind.String(), Output: t.Next.Output}
	case pipeline.NextHandoff:
		if t.Next.Agent == nil {
			return nil
		}
		l.ext.Next = &savedNext{Kind: t.Next.Kind.String(), Agent: t.Next.Agent.Name}
	default:
		return nil // the next turn goes on from the state
	}
	return saveExt(l.run, &l.ext)
}

// replay ends a resumed turn with the saved decision of the turn whose
// commit failed; the commit has just completed.
func (l *ledger) replay(t *pipeline.Turn) error {
	next := *l.ext.Next
	switch {
	case next.Kind == pipeline.NextFinalOutput.String():
		t.Next = pipeline.NextStep{Kind: pipeline.NextFinalOutput, Output: next.Output}
	case t.Agent.Name == next.Agent:
		// The handoff was taken already: a save that carried it committed
		// although its caller saw a failure. The commit is now complete and
		// the target goes on, as it would have after the handoff.
		t.Next = pipeline.NextStep{Kind: pipeline.NextRunAgain}
	default:
		var to *pipeline.Agent
		for _, h := range t.Agent.Handoffs {
			if h.Agent != nil && h.Agent.Name == next.Agent {
				to = h.Agent
				break
			}
		}
		if to == nil {
			return &StateError{RunID: l.run.ID(), Err: fmt.Errorf("handoff target %q is not a handoff of agent %q", next.Agent, t.Agent.Name)}
		}
		t.Next = pipeline.NextStep{Kind: pipeline.NextHandoff, Agent: to}
	}
	l.ext.Next = nil
	return saveExt(l.run, &l.ext)
}
