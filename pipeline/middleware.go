package pipeline

import "context"

// A Middleware wraps any of the stages of a run: the whole run (or its
// resumption), each turn, the model call of a turn, and each tool call. A
// nil field passes that stage through.
// The wrap functions run once, when a [Runner] is built, never per turn.
//
// The handlers a middleware returns must be safe for concurrent use; keep
// per-turn data on the [Turn] or in the context, not in the middleware.
type Middleware struct {
	// Name identifies the middleware in errors and traces.
	Name  string
	Run   func(RunHandler) RunHandler
	Turn  func(Handler) Handler
	Model func(Model) Model
	Tool  func(ToolHandler) ToolHandler
}

// Chain composes middleware into one. The first middleware is the
// outermost on every stage: its Turn function sees the turn first and its
// result last, and likewise for the model and tool stages. Nil stage
// functions are skipped. Chain does the composition once; the returned
// Middleware adds no cost per turn beyond the handlers themselves.
//
// The recommended order of turnkit's own middleware is the one [Stack]
// builds.
func Chain(mws ...Middleware) Middleware {
	mws = append([]Middleware(nil), mws...)
	out := Middleware{Name: "chain"}
	out.Run = func(h RunHandler) RunHandler {
		for i := len(mws) - 1; i >= 0; i-- {
			if mws[i].Run != nil {
				h = mws[i].Run(h)
			}
		}
		return h
	}
	out.Turn = func(h Handler) Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			if mws[i].Turn != nil {
				h = mws[i].Turn(h)
			}
		}
		return h
	}
	out.Model = func(h Model) Model {
		for i := len(mws) - 1; i >= 0; i-- {
			if mws[i].Model != nil {
				h = mws[i].Model(h)
			}
		}
		return h
	}
	out.Tool = func(h ToolHandler) ToolHandler {
		for i := len(mws) - 1; i >= 0; i-- {
			if mws[i].Tool != nil {
				h = mws[i].Tool(h)
			}
		}
		return h
	}
	return out
}

// When applies mw only to the turns for which pred reports true; other turns
// and their model and tool calls skip it. Its Run stage, if any, always
// applies. The wrapped handlers are built once. pred must be safe for concurrent use and must not block.
func When(pred func(*Turn) bool, mw Middleware) Middleware {
	out := Middleware{Name: mw.Name, Run: mw.Run}
	if mw.Turn != nil {
		out.Turn = func(next Handler) Handler {
			wrapped := mw.Turn(next)
			return HandlerFunc(func(ctx context.Context, t *Turn) error {
				if pred(t) {
					return wrapped.ServeTurn(ctx, t)
				}
				return next.ServeTurn(ctx, t)
			})
		}
	}
	if mw.Model != nil {
		out.Model = func(next Model) Model {
			wrapped := mw.Model(next)
			return ModelFunc(func(ctx context.Context, c *ModelCall) (*ModelResponse, error) {
				if pred(c.Turn) {
					return wrapped.Respond(ctx, c)
				}
				return next.Respond(ctx, c)
			})
		}
	}
	if mw.Tool != nil {
		out.Tool = func(next ToolHandler) ToolHandler {
			wrapped := mw.Tool(next)
			return ToolHandlerFunc(func(ctx context.Context, c *ToolCall) (*ToolResult, error) {
				if pred(c.Turn) {
					return wrapped.CallTool(ctx, c)
				}
				return next.CallTool(ctx, c)
			})
		}
	}
	return out
}
