package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Text returns a custom tool named name: the model calls it with freeform
// text instead of JSON arguments (a program, a query, a patch), and fn gets
// that text as it is, and returns the output the model sees. With
// [Grammar] the model's input follows a grammar; without it the input is
// free text. It is [Func]'s counterpart for a func of a string: the same
// options apply ([NeedsApproval], [NeedsApprovalFunc]; [WithStrict] does
// not matter), fn gets the call in its context (see [CallFromContext]), and
// its error is returned unchanged. fn returns a string, or a [Content]
// to answer with images and files (a custom_tool_call_output whose output
// is a list of parts).
//
// The Responses API calls it with a custom_tool_call and takes its answer
// as a custom_tool_call_output. The returned tool is safe for concurrent
// use if fn is. Text panics, with a "tool: " message, on a nil fn or a
// name the model API would refuse.
func Text[Out string | Content](name, description string, fn func(ctx context.Context, input string) (Out, error), opts ...Option) pipeline.Tool {
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
	t := &textTool[Out]{spec: pipeline.ToolSpec{Name: name, Description: description, Custom: format}, fn: fn, timeout: cfg.timeout, enabled: cfg.enabled}
	switch {
	case cfg.approvalFunc != nil:
		return &textApprovalTool[Out]{textTool: t, need: cfg.approvalFunc}
	case cfg.approvalSet:
		need := cfg.approval
		return &textApprovalTool[Out]{textTool: t, need: func(context.Context, *pipeline.ToolCall) (bool, error) { return need, nil }}
	}
	return t
}

type textTool[Out string | Content] struct {
	spec    pipeline.ToolSpec
	fn      func(ctx context.Context, input string) (Out, error)
	timeout time.Duration
	enabled pipeline.Condition
}

var (
	_ pipeline.TimeoutTool     = (*textTool[string])(nil)
	_ pipeline.ConditionalTool = (*textTool[string])(nil)
)

// Condition returns the condition set with [WithEnabled], nil if none was.
func (t *textTool[Out]) Condition() pipeline.Condition { return t.enabled }

// Timeout returns the limit of each call set with [WithTimeout], 0 if none
// was.
func (t *textTool[Out]) Timeout() time.Duration { return t.timeout }

var _ pipeline.ContentTool = (*textTool[Content])(nil)

// Spec returns the tool's spec. Custom is shared and must not be modified.
func (t *textTool[Out]) Spec() pipeline.ToolSpec { return t.spec }

// Call calls the tool's func with the call's text input. A [Content]
// result is returned as its text (see [Content]); the runner calls
// CallContent.
func (t *textTool[Out]) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	text, _, err := t.CallContent(ctx, c)
	return text, err
}

// CallContent calls the tool's func with the call's text input. A
// [Content] result is returned as its parts, with their text; a string as
// text, with no parts.
func (t *textTool[Out]) CallContent(ctx context.Context, c *pipeline.ToolCall) (string, []state.ContentPart, error) {
	out, err := t.fn(context.WithValue(ctx, callKey{}, c), c.Arguments)
	if err != nil {
		return "", nil, err
	}
	switch v := any(out).(type) {
	case Content:
		if len(v) == 0 {
			return "", nil, nil
		}
		return state.JoinText(v), v, nil
	case string:
		return v, nil, nil
	}
	panic("unreachable: Out is string or Content")
}

type textApprovalTool[Out string | Content] struct {
	*textTool[Out]
	need func(ctx context.Context, c *pipeline.ToolCall) (bool, error)
}

var _ pipeline.ApprovalRequirer = (*textApprovalTool[string])(nil)

// NeedsApproval reports whether the call needs a human decision before it
// runs.
func (t *textApprovalTool[Out]) NeedsApproval(ctx context.Context, c *pipeline.ToolCall) (bool, error) {
	return t.need(ctx, c)
}
