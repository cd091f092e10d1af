package pipeline

import (
	"context"
	"runtime/debug"
)

// WithRecover makes the runner turn a panic in any stage into a
// [*PanicError] with the stack, returned by Run or Resume like any other
// error. The runner does not recover by default.
//
// Recovery is installed at both ends of the chain. Innermost, it covers the
// core, the model and the tools, so that every middleware sees an ordinary
// error it can record (a checkpoint, a span, a log line); a panic in a tool
// is recovered in the tool's own goroutine. Outermost, it covers the
// middleware themselves.
func WithRecover() Option {
	return optionFunc(func(c *config) { c.recover = true })
}

// withRecovery returns mws with the recovery middleware at both ends.
func withRecovery(mws []Middleware) []Middleware {
	out := make([]Middleware, 0, len(mws)+2)
	out = append(out, recoverMiddleware())
	out = append(out, mws...)
	return append(out, recoverMiddleware())
}

func recoverMiddleware() Middleware {
	return Middleware{
		Name: "recover",
		Run: func(next RunHandler) RunHandler {
			return RunHandlerFunc(func(ctx context.Context, rc *RunCall) (res *Result, err error) {
				defer recoverInto("run", &err)
				return next.ServeRun(ctx, rc)
			})
		},
		Turn: func(next Handler) Handler {
			return HandlerFunc(func(ctx context.Context, t *Turn) (err error) {
				defer recoverInto("turn", &err)
				return next.ServeTurn(ctx, t)
			})
		},
		Model: func(next Model) Model {
			return ModelFunc(func(ctx context.Context, c *ModelCall) (resp *ModelResponse, err error) {
				defer recoverInto("model", &err)
				return next.Respond(ctx, c)
			})
		},
		Tool: func(next ToolHandler) ToolHandler {
			return ToolHandlerFunc(func(ctx context.Context, c *ToolCall) (res *ToolResult, err error) {
				defer recoverInto("tool", &err)
				return next.CallTool(ctx, c)
			})
		},
	}
}

func recoverInto(stage string, err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Stage: stage, Value: v, Stack: debug.Stack()}
	}
}
