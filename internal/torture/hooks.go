package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Hook names a point where the torture loop may kill a worker.
type Hook string

// The hook points.
const (
	// HookModel is the middle of a model call: the request was made, the
	// response not yet returned.
	HookModel Hook = "model.call"
	// HookToolReturned is just after a tool returned, before its output is
	// committed.
	HookToolReturned Hook = "tool.returned"
	// HookLookupReturned is just after a call of [ToolLookup] returned in
	// a response whose calls are all lookups, before its output is
	// committed (after [HookToolReturned]). The checkpointer makes no save
	// before such a response's calls, so a kill there loses the response
	// unless another of its lookups was committed first.
	HookLookupReturned Hook = "lookup.returned"
	// HookAppendBefore and HookAppendAfter are just before and just after a
	// session append.
	HookAppendBefore Hook = "append.before"
	HookAppendAfter  Hook = "append.after"
	// HookSaveBefore and HookSaveAfter are just before and just after a
	// checkpoint save.
	HookSaveBefore Hook = "save.before"
	HookSaveAfter  Hook = "save.after"
	// HookGuardrail is the middle of the output guardrail's check of a
	// final output: the turn's items are recorded, the verdict is not.
	HookGuardrail Hook = "guardrail.check"
	// HookPrune is just before the checkpointer's retention deletes a
	// finished run's checkpoint, which the harness has archived (see
	// [Archive]).
	HookPrune Hook = "prune"
	// HookPop is just after a worker popped an item of the session of a
	// paused run (see [WithPops]).
	HookPop Hook = "pop"
)

// AllHooks lists every hook point.
var AllHooks = append(StackHooks[:len(StackHooks):len(StackHooks)], HookPrune, HookPop)

// StackHooks lists the hook points a [Stack] reaches without [WithArchive]
// and without a plan of [WithPops]: every hook but [HookPrune] and
// [HookPop]. A trap armed at a hook its worker never reaches never fires.
var StackHooks = []Hook{HookModel, HookToolReturned, HookLookupReturned, HookAppendBefore, HookAppendAfter, HookSaveBefore, HookSaveAfter, HookGuardrail}

// Hooks is called at each hook point. It must be safe for concurrent use.
type Hooks interface {
	At(ctx context.Context, h Hook)
}

type nopHooks struct{}

func (nopHooks) At(context.Context, Hook) {}

func orNop(h Hooks) Hooks {
	if h == nil {
		return nopHooks{}
	}
	return h
}

// A Trap is the [Hooks] of a child process: at the Nth occurrence of its
// hook it writes "armed <hook> <n>" to its writer and blocks forever, so
// the parent kills the process exactly there. Other hooks pass.
type Trap struct {
	Hook Hook
	Nth  int
	W    io.Writer

	mu sync.Mutex
	n  int
}

// At blocks forever at the trap's occurrence of its hook.
func (t *Trap) At(_ context.Context, h Hook) {
	if t == nil || h != t.Hook {
		return
	}
	t.mu.Lock()
	t.n++
	fire := t.n == t.Nth
	if fire {
		fmt.Fprintf(t.W, "armed %s %d\n", h, t.n)
	}
	t.mu.Unlock()
	if fire {
		select {} // the parent kills the process here
	}
}

// ToolHook returns tool-stage middleware that calls [HookToolReturned]
// after the tool returned, then [HookLookupReturned] if it was a lookup in
// a response of lookups only. Place it inside persistence so that it runs
// before the call's commit.
func ToolHook(hooks Hooks) pipeline.Middleware {
	hooks = orNop(hooks)
	return pipeline.Middleware{
		Name: "torture.hooks",
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				res, err := next.CallTool(ctx, c)
				if err == nil && res != nil && res.Status == pipeline.ToolCompleted {
					hooks.At(ctx, HookToolReturned)
					if !c.Resumed && onlyLookups(c.Turn) {
						hooks.At(ctx, HookLookupReturned)
					}
				}
				return res, err
			})
		},
	}
}

// onlyLookups reports whether every tool call of the turn's response is a
// lookup (handoffs are not tool calls).
func onlyLookups(t *pipeline.Turn) bool {
	for _, c := range t.Calls {
		if c.Name != ToolLookup {
			return false
		}
	}
	return len(t.Calls) > 0
}

// hookedSession calls the append hooks around the inner store's Append.
type hookedSession struct {
	session.Store
	hooks Hooks
}

// HookSession returns inner with [HookAppendBefore] and [HookAppendAfter]
// around each Append.
func HookSession(inner session.Store, hooks Hooks) session.Store {
	return &hookedSession{Store: inner, hooks: orNop(hooks)}
}

func (s *hookedSession) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	s.hooks.At(ctx, HookAppendBefore)
	err := s.Store.Append(ctx, sessionID, runID, items)
	if err == nil {
		s.hooks.At(ctx, HookAppendAfter)
	}
	return err
}

// hookedState calls the save hooks around the inner store's Save.
type hookedState struct {
	state.Store
	hooks   Hooks
	archive *Archive
}

// HookState returns inner with [HookSaveBefore] and [HookSaveAfter] around
// each Save.
func HookState(inner state.Store, hooks Hooks) state.Store {
	return &hookedState{Store: inner, hooks: orNop(hooks)}
}

func (s *hookedState) Save(ctx context.Context, run *state.Run) error {
	s.hooks.At(ctx, HookSaveBefore)
	err := s.Store.Save(ctx, run)
	if err == nil {
		s.hooks.At(ctx, HookSaveAfter)
	}
	return err
}

// A saveAppender saves a checkpoint and appends to a session in one
// transaction, as session/sqlite, postgres and redis do; the checkpointer
// uses it when its state store is its session store.
type saveAppender interface {
	SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error
}

// hookedBoth is one store that keeps sessions and checkpoints, with the
// hooks around each of its writes: the save hooks around Save, the append
// hooks around Append, and both around SaveAppend (save, then append
// before; append, then save after), so that a trap at any of them kills
// the worker before or after the one transaction.
type hookedBoth struct {
	session.Store
	states  state.Store
	both    saveAppender
	hooks   Hooks
	archive *Archive
}

// HookBoth returns store, which keeps both sessions and checkpoints and
// saves and appends in one transaction, with the hooks of [HookSession]
// and [HookState] around its writes. The checkpointer sees one store, and
// so uses the one transaction as it would in production.
func HookBoth[S interface {
	session.Store
	state.Store
	saveAppender
}](store S, hooks Hooks) interface {
	session.Store
	state.Store
} {
	return &hookedBoth{Store: store, states: store, both: store, hooks: orNop(hooks)}
}

func (s *hookedBoth) Load(ctx context.Context, runID string) (*state.Run, error) {
	return s.states.Load(ctx, runID)
}

func (s *hookedBoth) Delete(ctx context.Context, runID string) error {
	return archiveDelete(ctx, s.states, s.archive, s.hooks, runID)
}

func (s *hookedBoth) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	return listRuns(ctx, s.states, q)
}

func (s *hookedState) Delete(ctx context.Context, runID string) error {
	return archiveDelete(ctx, s.Store, s.archive, s.hooks, runID)
}

func (s *hookedState) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	return listRuns(ctx, s.Store, q)
}

// errNoLister is the error of ListRuns on a hooked store whose inner
// store lists no runs.
var errNoLister = errors.New("torture: the store does not list runs (state.Lister)")

func listRuns(ctx context.Context, st state.Store, q state.RunQuery) (state.RunPage, error) {
	l, ok := st.(state.Lister)
	if !ok {
		return state.RunPage{}, errNoLister
	}
	return l.ListRuns(ctx, q)
}

// archiveDelete deletes a run's checkpoint from st; with an archive, it
// first records the checkpoint of a finished run there, then calls
// [HookPrune]. A kill between the two leaves the run archived and its
// checkpoint in place.
func archiveDelete(ctx context.Context, st state.Store, a *Archive, hooks Hooks, runID string) error {
	if a != nil {
		run, err := st.Load(ctx, runID)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return err
		}
		if err == nil {
			if _, finished := run.FinalOutput(); finished {
				if err := a.record(run); err != nil {
					return err
				}
			}
		}
		hooks.At(ctx, HookPrune)
	}
	return st.Delete(ctx, runID)
}

func (s *hookedBoth) Save(ctx context.Context, run *state.Run) error {
	s.hooks.At(ctx, HookSaveBefore)
	err := s.states.Save(ctx, run)
	if err == nil {
		s.hooks.At(ctx, HookSaveAfter)
	}
	return err
}

func (s *hookedBoth) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	s.hooks.At(ctx, HookAppendBefore)
	err := s.Store.Append(ctx, sessionID, runID, items)
	if err == nil {
		s.hooks.At(ctx, HookAppendAfter)
	}
	return err
}

func (s *hookedBoth) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	s.hooks.At(ctx, HookSaveBefore)
	s.hooks.At(ctx, HookAppendBefore)
	err := s.both.SaveAppend(ctx, run, sessionID, items)
	if err == nil {
		s.hooks.At(ctx, HookAppendAfter)
		s.hooks.At(ctx, HookSaveAfter)
	}
	return err
}
