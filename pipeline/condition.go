package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrToolDisabled means the model called a tool or a handoff that its
// condition disabled on the turn. It is wrapped by [*ToolDisabledError].
var ErrToolDisabled = errors.New("pipeline: tool disabled")

// A Condition decides whether a tool, a handoff or an MCP server's tools
// are enabled on a turn. The core asks it once per turn, before the model
// call (and before the calls of a resumed turn run), with the turn as it
// is then. A condition that reads only what is fixed for a run (a value
// of ctx, t.Run.ID(), t.Run.SessionID(), the agent) enables per run; one
// that reads the turn (t.Number, t.Run.Usage(), the items so far) enables
// per turn. It must be safe for concurrent use and should be quick: it is
// on every turn's path.
//
// A disabled tool or handoff is not sent to the model, and a call to it
// (a model may still name it, from an earlier turn's history) is not run:
// the model gets a [*ToolDisabledError] as the call's output.
type Condition func(ctx context.Context, t *Turn) bool

// A ConditionalTool is a [Tool] enabled only when its condition holds:
// tool.WithEnabled gives one to the tools of package tool, and
// mcp.Server.Enabled to the tools of an MCP server. Condition returns the
// tool's condition, read once per agent per run, or nil when the tool is
// always enabled. A handoff's condition is [Handoff.Enabled].
type ConditionalTool interface {
	Tool
	Condition() Condition
}

// A ToolDisabledError reports a call to a tool or a handoff that was
// disabled on the turn (see [Condition]). The model sees it as the call's
// output.
type ToolDisabledError struct {
	Agent  string
	Tool   string
	CallID string
}

// Error says what failed, where, and why.
func (e *ToolDisabledError) Error() string {
	return fmt.Sprintf("pipeline: agent %q has tool %q disabled on this turn (call %s)", e.Agent, e.Tool, e.CallID)
}

// Unwrap returns [ErrToolDisabled].
func (e *ToolDisabledError) Unwrap() error { return ErrToolDisabled }

// A toolCondition is the condition of one of an agent's tools or
// handoffs, with the index of its spec among the agent's (see toolSpecs).
type toolCondition struct {
	name string
	spec int
	cond Condition
}

// conditionsOf returns the conditions of an agent's tools and handoffs,
// nil when none has one. The runner reads them once per agent per run,
// beside the specs.
func conditionsOf(a *Agent) []toolCondition {
	var out []toolCondition
	for i, tl := range a.Tools {
		if ct, ok := tl.(ConditionalTool); ok {
			if c := ct.Condition(); c != nil {
				out = append(out, toolCondition{name: tl.Spec().Name, spec: i, cond: c})
			}
		}
	}
	for i := range a.Handoffs {
		if c := a.Handoffs[i].Enabled; c != nil {
			out = append(out, toolCondition{name: a.Handoffs[i].toolName(), spec: len(a.Tools) + i, cond: c})
		}
	}
	return out
}

// applyConditions asks the turn's conditions, and leaves out of the
// turn's tool specs those that are disabled, which it notes on the turn.
// A turn without conditions costs nothing here.
func applyConditions(ctx context.Context, t *Turn) {
	if len(t.conds) == 0 {
		return
	}
	var off []int
	t.disabled = t.disabled[:0]
	for _, tc := range t.conds {
		if !tc.cond(ctx, t) {
			t.disabled = append(t.disabled, tc.name)
			off = append(off, tc.spec)
		}
	}
	if len(off) == 0 {
		return
	}
	specs := make([]ToolSpec, 0, len(t.tools)-len(off))
	for i, s := range t.tools {
		if !slices.Contains(off, i) {
			specs = append(specs, s)
		}
	}
	t.tools = specs
}

// ToolEnabled reports whether the tool or handoff with the given function
// name is enabled on the turn, as its condition decided (see
// [Condition]); a tool without a condition is enabled. The answer is
// known once the turn stage reached the core.
func (t *Turn) ToolEnabled(name string) bool { return !slices.Contains(t.disabled, name) }

// checkDisabled returns the result of a call to a disabled tool, or nil.
func checkDisabled(c *ToolCall) *ToolResult {
	if len(c.Turn.disabled) == 0 || c.Turn.ToolEnabled(c.Name) {
		return nil
	}
	err := &ToolDisabledError{Agent: c.Turn.Agent.Name, Tool: c.Name, CallID: c.CallID}
	return &ToolResult{Status: ToolCompleted, Output: err.Error(), Err: err}
}
