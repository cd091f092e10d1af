package pipeline

import (
	"context"
	"runtime/debug"
)

// Recover is opt-in middleware that turns a panic in any stage inside it
// into a [*PanicError] with the stack. The chain does not recover by
// default; put Recover innermost, so that the middleware outside it sees an
// ordinary error. A panic in a tool is recovered in the tool's own
// goroutine.
var Recover = Middleware{
	Name: "recover",
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

func recoverInto(stage string, err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Stage: stage, Value: v, Stack: debug.Stack()}
	}
}
