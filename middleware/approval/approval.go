package approval

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Require returns middleware for the tool stage that holds calls for a
// human decision. A call needs approval when policy says so or its tool
// does (a [pipeline.ApprovalRequirer]); an error of either fails closed. A
// nil policy leaves the decision to the tools.
//
// For a call that needs approval, the decision on the run's state that
// governs it ([state.Run.DecisionFor]: an exact decision beats an "always"
// one) says what happens:
//
//   - none: the call does not run and its result is [pipeline.ToolPending];
//     the core records the approval, the other calls of the response still
//     run, and the turn ends in an interruption;
//   - approved: the call goes on down the chain; an exact decision made on
//     other arguments (the checkpoint was edited, or the model reused the
//     call ID) stops the run with a [*state.FingerprintError] before the
//     tool runs;
//   - rejected: the call does not run; its result is [pipeline.ToolRejected]
//     with the formatted message (see [WithRejectionFormatter]).
//
// Place it outside the tool guardrails, so that a held or rejected call
// never reaches them. The handler is safe for concurrent use.
func Require(policy Policy, opts ...Option) pipeline.Middleware {
	h := &handler{policy: policy, cfg: newConfig(opts)}
	return pipeline.Middleware{
		Name: "approval",
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				return h.call(ctx, c, next)
			})
		},
	}
}

type handler struct {
	policy Policy
	cfg    config
}

func (h *handler) call(ctx context.Context, c *pipeline.ToolCall, next pipeline.ToolHandler) (*pipeline.ToolResult, error) {
	if !h.needs(ctx, c) {
		return next.CallTool(ctx, c)
	}
	d, _, ok := c.Turn.Run.DecisionFor(c.Name, c.CallID)
	if !ok {
		return c.Pending(), nil // in the call: no allocation
	}
	if err := d.Check(c.CallID, c.Name, c.Arguments); err != nil {
		return nil, err
	}
	switch d.Verdict {
	case state.Approved:
		return next.CallTool(ctx, c)
	case state.Rejected:
		return &pipeline.ToolResult{Status: pipeline.ToolRejected, Output: h.cfg.format(c, d)}, nil
	}
	return nil, fmt.Errorf("approval: tool %q call %s: decision without a verdict", c.Name, c.CallID)
}

// needs reports whether the call needs approval: the policy's answer,
// else the tool's.
func (h *handler) needs(ctx context.Context, c *pipeline.ToolCall) bool {
	if h.policy != nil && h.ask(ctx, c, h.policy) {
		return true
	}
	if ar, ok := c.Tool.(pipeline.ApprovalRequirer); ok {
		return h.ask(ctx, c, ar)
	}
	return false
}

// ask asks p whether the call needs approval. An error is reported to the
// error handler and fails closed.
func (h *handler) ask(ctx context.Context, c *pipeline.ToolCall, p Policy) bool {
	need, err := p.NeedsApproval(ctx, c)
	if err != nil {
		if h.cfg.onErr != nil {
			h.cfg.onErr(ctx, c, &PolicyError{Tool: c.Name, CallID: c.CallID, Err: err})
		}
		return true
	}
	return need
}
