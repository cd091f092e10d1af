package torture

import (
	"context"
	"errors"
	"sync"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Checkpointer keeps the checkpoint of every run it serves in a
// [state.Store], ahead of the run's session (see the package
// documentation): before a response's tools run, before every session
// append, and when the run returns. A turn that decides the final output
// marks the run finished before its final commit.
//
// Use [Checkpointer.Middleware] in the runner's chain right after the
// persistence middleware, and give persistence the store that
// [Checkpointer.Session] returns. A save that fails (a conflict: another
// worker took the run) fails the append or the tool call it guards, so the
// run stops before anything else happens.
type Checkpointer struct {
	store state.Store
	live  sync.Map // run ID → *liveRun
}

type liveRun struct {
	mu  sync.Mutex // one save at a time
	run *state.Run
}

// NewCheckpointer returns a checkpointer saving into store.
func NewCheckpointer(store state.Store) *Checkpointer {
	if store == nil {
		panic("torture: NewCheckpointer called with a nil state.Store")
	}
	return &Checkpointer{store: store}
}

// turnSave makes the save before a response's tools run once per turn.
type turnSave struct {
	once sync.Once
	err  error
}

type turnSaveKey struct{}

// Middleware returns the run, turn and tool stages of the checkpointer.
func (c *Checkpointer) Middleware() pipeline.Middleware {
	return pipeline.Middleware{
		Name: "torture.checkpoint",
		Run: func(next pipeline.RunHandler) pipeline.RunHandler {
			return pipeline.RunHandlerFunc(func(ctx context.Context, rc *pipeline.RunCall) (*pipeline.Result, error) {
				lr := &liveRun{run: rc.Run}
				if _, dup := c.live.LoadOrStore(rc.Run.ID(), lr); dup {
					return nil, &state.StoreError{Op: "save", RunID: rc.Run.ID(), Err: state.ErrConflict}
				}
				defer c.live.Delete(rc.Run.ID())
				res, err := next.ServeRun(ctx, rc)
				if serr := c.save(context.WithoutCancel(ctx), lr); serr != nil {
					err = errors.Join(err, serr)
				}
				return res, err
			})
		},
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
				err := next.ServeTurn(context.WithValue(ctx, turnSaveKey{}, &turnSave{}), t)
				if err == nil && t.Next.Kind == pipeline.NextFinalOutput {
					t.Run.Finish(t.Next.Output) // the decision is saved with the final commit
				}
				return err
			})
		},
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, tc *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				ts, ok := ctx.Value(turnSaveKey{}).(*turnSave)
				if ok && !tc.Resumed {
					ts.once.Do(func() { ts.err = c.saveRun(ctx, tc.Turn.Run.ID()) })
					if ts.err != nil {
						return nil, ts.err
					}
				}
				return next.CallTool(ctx, tc)
			})
		},
	}
}

// saveRun saves the live run with the given ID, if this checkpointer
// serves it.
func (c *Checkpointer) saveRun(ctx context.Context, runID string) error {
	v, ok := c.live.Load(runID)
	if !ok {
		return nil
	}
	return c.save(ctx, v.(*liveRun))
}

func (c *Checkpointer) save(ctx context.Context, lr *liveRun) error {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return c.store.Save(ctx, lr.run)
}

// Session returns inner with a save of the appending run before each
// Append: the write-ahead that keeps the checkpoint ahead of the session.
func (c *Checkpointer) Session(inner session.Store) session.Store {
	return &aheadSession{Store: inner, c: c}
}

type aheadSession struct {
	session.Store
	c *Checkpointer
}

func (s *aheadSession) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if err := s.c.saveRun(ctx, runID); err != nil {
		return err
	}
	return s.Store.Append(ctx, sessionID, runID, items)
}
