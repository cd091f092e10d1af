package guardrails

import (
	"context"
	"slices"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// ToolInput returns a guardrail that checks each tool call before the tool
// runs. A check may allow the call, reject it ([RejectCall]: the tool does
// not run and the model sees the message as the call's output, status
// [pipeline.ToolRejected]) or trip (the run ends with a [*TripwireError]).
// With several checks a tripwire beats a rejection, and the first rejection
// in check order gives the message.
//
// Placed inside approval (the default), it sees only calls that will run
// now, once each: a pending or rejected call never reaches it, and an
// approved call is checked when it runs on resume. With [BeforeApproval]
// it is meant to sit outside approval and checks calls when the model makes
// them. Each check's result, with the call ID, is recorded in the run's
// state before the tool runs.
//
// The guardrail wraps the tool stage (and the run stage, to refuse resuming
// a run it stopped). Its handlers are safe for concurrent use: the calls of
// one response are checked concurrently. ToolInput panics if check is nil or
// an option does not apply.
func ToolInput(check Check[*pipeline.ToolCall], opts ...Option) pipeline.Middleware {
	cfg := newConfig(state.StageToolInput, opts)
	cs := checks("ToolInput", check, cfg)
	return pipeline.Middleware{
		Name: "guardrails.ToolInput",
		Run:  refuseTripped(state.StageToolInput, cs),
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return &toolInput{checks: cs, before: cfg.beforeApproval, next: next}
		},
	}
}

type toolInput struct {
	checks []named[*pipeline.ToolCall]
	before bool
	next   pipeline.ToolHandler
}

// CallTool checks the call, then runs it unless a check rejected it.
func (h *toolInput) CallTool(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
	if h.before && c.Resumed {
		return h.next.CallTool(ctx, c) // checked before approval, when the model made it
	}
	act, err := evaluate(ctx, h.checks, c.Turn.Agent, c, toolScope(c, state.StageToolInput))
	if err != nil {
		return nil, err
	}
	if act.Behavior == Reject {
		return &pipeline.ToolResult{Status: pipeline.ToolRejected, Output: act.Message}, nil
	}
	return h.next.CallTool(ctx, c)
}

// ToolOutput returns a guardrail that checks each completed tool call's
// output before the model (or the session) sees it. A check may allow the
// output, replace it ([ReplaceOutput]: the model sees the message instead;
// the status stays [pipeline.ToolCompleted]) or trip (the run ends with a
// [*TripwireError]; the call has no output). With several checks a
// tripwire beats a replacement, and the first replacement in check order
// gives the message. Rejected and pending calls are not checked: they have
// no output.
//
// Each check's result, with the call ID, is recorded in the run's state
// before the guardrail returns, so before persistence (outside it) appends
// the call. The guardrail wraps the tool stage (and the run stage, to refuse
// resuming a run it stopped); its handlers are safe for concurrent use.
// ToolOutput panics if check is nil or an option does not apply.
func ToolOutput(check Check[pipeline.ToolOutcome], opts ...Option) pipeline.Middleware {
	cfg := newConfig(state.StageToolOutput, opts)
	cs := checks("ToolOutput", check, cfg)
	return pipeline.Middleware{
		Name: "guardrails.ToolOutput",
		Run:  refuseTripped(state.StageToolOutput, cs),
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return &toolOutput{checks: cs, next: next}
		},
	}
}

type toolOutput struct {
	checks []named[pipeline.ToolOutcome]
	next   pipeline.ToolHandler
}

// CallTool runs the call, then checks its output.
func (h *toolOutput) CallTool(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
	res, err := h.next.CallTool(ctx, c)
	if err != nil || res == nil || res.Status != pipeline.ToolCompleted {
		return res, err
	}
	seen := *res // the checks get a copy; res stays the inner stage's
	seen.Content = slices.Clone(res.Content)
	act, err := evaluate(ctx, h.checks, c.Turn.Agent, pipeline.ToolOutcome{Call: c, Result: &seen}, toolScope(c, state.StageToolOutput))
	if err != nil {
		return nil, err
	}
	if act.Behavior == Replace {
		return &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: act.Message, Err: res.Err}, nil
	}
	return res, nil
}

func toolScope(c *pipeline.ToolCall, stage state.GuardrailStage) scope {
	return scope{run: c.Turn.Run, stage: stage, turn: c.Turn.Number, callID: c.CallID, t: c.Turn}
}
