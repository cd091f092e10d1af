package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/pipeline"
)

// Text returns a custom tool named name: the model calls it with freeform
// text instead of JSON arguments (a program, a query, a patch), and fn gets
// that text as it is, and returns the output the model sees. With
// [Grammar] the model's input follows a grammar; without it the input is
// free text. It is [Func]'s counterpart for a func of a string: the same
// options apply ([NeedsApproval], [NeedsApprovalFunc]; [WithStrict] does
// not matter), fn gets the call in its context (see [CallFromContext]), and
// its error is returned unchanged.
//
// The Responses API calls it with a custom_tool_call and takes its answer
// as a custom_tool_call_output. The returned tool is safe for concurrent
// use if fn is. Text panics, with a "tool: " message, on a nil fn or a
// name the model API would refuse.
func Text(name, description string, fn func(ctx context.Context, input string) (string, error), opts ...Option) pipeline.Tool {
	if fn == nil {
		panic(fmt.Sprintf("tool: Text %q called with a nil func", name))
	}
	if !validName.MatchString(name) {
		panic(fmt.Sprintf("tool: Text name %q must match %s", name, validName))
	}
	cfg := newConfig(opts)
	format := cfg.grammar
	if format == nil {
		format = json.RawMessage(`{"type":"text"}`)
	}
	t := &textTool{spec: pipeline.ToolSpec{Name: name, Description: description, Custom: format}, fn: fn}
	switch {
	case cfg.approvalFunc != nil:
		return &textApprovalTool{textTool: t, need: cfg.approvalFunc}
	case cfg.approvalSet:
		need := cfg.approval
		return &textApprovalTool{textTool: t, need: func(context.Context, *pipeline.ToolCall) (bool, error) { return need, nil }}
	}
	return t
}

type textTool struct {
	spec pipeline.ToolSpec
	fn   func(ctx context.Context, input string) (string, error)
}

var _ pipeline.Tool = (*textTool)(nil)

// Spec returns the tool's spec. Custom is shared and must not be modified.
func (t *textTool) Spec() pipeline.ToolSpec { return t.spec }

// Call calls the tool's func with the call's text input.
func (t *textTool) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	return t.fn(context.WithValue(ctx, callKey{}, c), c.Arguments)
}

type textApprovalTool struct {
	*textTool
	need func(ctx context.Context, c *pipeline.ToolCall) (bool, error)
}

var _ pipeline.ApprovalRequirer = (*textApprovalTool)(nil)

// NeedsApproval reports whether the call needs a human decision before it
// runs.
func (t *textApprovalTool) NeedsApproval(ctx context.Context, c *pipeline.ToolCall) (bool, error) {
	return t.need(ctx, c)
}
