package pipeline

import "context"

// A Handler serves one turn of a run, as an http.Handler serves one request.
//
// The innermost Handler is the runner's core: it calls the model stage,
// runs the tool stage for the calls the model asked for, records the items
// and sets [Turn.Next]. Middleware wraps it. A Handler must be safe for
// concurrent use: one handler serves every run of a [Runner]. A nil error
// means t.Next is set; an error ends the run.
type Handler interface {
	ServeTurn(ctx context.Context, t *Turn) error
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(ctx context.Context, t *Turn) error

// ServeTurn calls f(ctx, t).
func (f HandlerFunc) ServeTurn(ctx context.Context, t *Turn) error { return f(ctx, t) }

// A ToolHandler serves the tool stage for one tool call. The calls of one
// response run concurrently, so a ToolHandler must be safe for concurrent
// use. The result is non-nil if and only if the error is nil; an error
// aborts the run (a tool's own failure is reported to the model as its
// output by default, see [WithToolErrorsAbort]).
//
// A result is valid while the turn is served, like the call. The core's
// tool stage returns the result of a completed call in the call itself,
// without an allocation: a middleware that calls next twice for one call
// gets the same result back, filled in anew, so it reads the first one
// before the second call, or copies it.
type ToolHandler interface {
	CallTool(ctx context.Context, c *ToolCall) (*ToolResult, error)
}

// ToolHandlerFunc adapts a function to a [ToolHandler].
type ToolHandlerFunc func(ctx context.Context, c *ToolCall) (*ToolResult, error)

// CallTool calls f(ctx, c).
func (f ToolHandlerFunc) CallTool(ctx context.Context, c *ToolCall) (*ToolResult, error) {
	return f(ctx, c)
}

// A RunHandler serves a whole run, or the resumption of one: the loop of
// turns. Run middleware sees a run begin and end; tracing opens its
// invoke_agent span there and logging its run events. The result is
// non-nil whenever the run started, even with an error: its state is the
// resumable state as far as the run got. It must be safe for concurrent
// use.
type RunHandler interface {
	ServeRun(ctx context.Context, c *RunCall) (*Result, error)
}

// RunHandlerFunc adapts a function to a [RunHandler].
type RunHandlerFunc func(ctx context.Context, c *RunCall) (*Result, error)

// ServeRun calls f(ctx, c).
func (f RunHandlerFunc) ServeRun(ctx context.Context, c *RunCall) (*Result, error) { return f(ctx, c) }
