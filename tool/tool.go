package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// validName is what the OpenAI function-calling API accepts as a name.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Func returns a tool named name that decodes the model's arguments into
// an In and calls fn with them. In must be a struct type or a pointer to
// one; its JSON schema is generated here, once (see the package
// documentation for its shape and for the tags it reads).
//
// The tool's output is fn's result: a string as it is, a [Content] as its
// parts (text, images, files), any other type marshalled to JSON. Arguments that do not match the schema never reach
// fn: Call returns a [*pipeline.ArgumentError] with the JSON path of the
// first bad value. fn's own error is returned unchanged, and the runner
// reports it to the model by default. fn gets the call's context, which
// also carries the [pipeline.ToolCall] (see [CallFromContext]); it must
// honour the context's cancellation.
//
// The returned tool is safe for concurrent use if fn is. With
// [NeedsApproval] or [NeedsApprovalFunc] it is also a
// [pipeline.ApprovalRequirer].
//
// Func panics, with a "tool: " message, on a wiring mistake: a nil fn, a
// name the model API would refuse, or an input type that is not a struct
// or is recursive.
func Func[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...Option) pipeline.Tool {
	if fn == nil {
		panic(fmt.Sprintf("tool: Func %q called with a nil func", name))
	}
	if !validName.MatchString(name) {
		panic(fmt.Sprintf("tool: Func name %q must match %s", name, validName))
	}
	cfg := newConfig(opts)
	if cfg.grammar != nil {
		panic(fmt.Sprintf("tool: Func %q given Grammar; only Text tools take one", name))
	}
	in := reflect.TypeFor[In]()
	s, terr := newSchema(in)
	if terr != nil {
		panic(fmt.Sprintf("tool: Func %q: %s", name, terr.detail()))
	}
	spec := pipeline.ToolSpec{
		Name:        name,
		Description: description,
		Parameters:  s.json,
		Strict:      cfg.strict && s.strict,
	}
	t := &funcTool[In, Out]{spec: spec, schema: s, fn: fn, timeout: cfg.timeout, enabled: cfg.enabled}
	switch {
	case cfg.approvalFunc != nil:
		return &approvalTool[In, Out]{funcTool: t, need: cfg.approvalFunc}
	case cfg.approvalSet:
		need := cfg.approval
		return &approvalTool[In, Out]{funcTool: t, need: func(context.Context, *pipeline.ToolCall) (bool, error) {
			return need, nil
		}}
	}
	return t
}

type funcTool[In, Out any] struct {
	spec    pipeline.ToolSpec
	schema  *schema
	fn      func(ctx context.Context, in In) (Out, error)
	timeout time.Duration
	enabled pipeline.Condition
}

var (
	_ pipeline.TimeoutTool     = (*funcTool[struct{}, string])(nil)
	_ pipeline.ConditionalTool = (*funcTool[struct{}, string])(nil)
)

// Condition returns the condition set with [WithEnabled], nil if none was.
func (t *funcTool[In, Out]) Condition() pipeline.Condition { return t.enabled }

// Timeout returns the limit of each call set with [WithTimeout], 0 if none
// was.
func (t *funcTool[In, Out]) Timeout() time.Duration { return t.timeout }

// Spec returns the tool's spec. Parameters is shared and must not be
// modified.
func (t *funcTool[In, Out]) Spec() pipeline.ToolSpec { return t.spec }

// ResultType returns Out, the type of the func's result, so that a
// terminal tool can be checked against its agent's output type.
func (t *funcTool[In, Out]) ResultType() reflect.Type { return reflect.TypeFor[Out]() }

var _ pipeline.ResultTyper = (*funcTool[struct{}, string])(nil)

var _ pipeline.ContentTool = (*funcTool[struct{}, Content])(nil)

// Call decodes c.Arguments and calls the tool's func. A [Content] result
// is returned as its text (see [Content]); the runner calls CallContent.
func (t *funcTool[In, Out]) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	text, _, err := t.CallContent(ctx, c)
	return text, err
}

// CallContent decodes c.Arguments and calls the tool's func. A [Content]
// result is returned as its parts, with their text; any other result as
// text, with no parts.
func (t *funcTool[In, Out]) CallContent(ctx context.Context, c *pipeline.ToolCall) (string, []state.ContentPart, error) {
	var in In
	if err := t.schema.decode(c.Arguments, &in); err != nil {
		err.Tool, err.CallID = t.spec.Name, c.CallID
		return "", nil, err
	}
	out, err := t.fn(context.WithValue(ctx, callKey{}, c), in)
	if err != nil {
		return "", nil, err
	}
	switch v := any(out).(type) {
	case string:
		return v, nil, nil
	case Content:
		if len(v) == 0 {
			return "", nil, nil
		}
		return state.JoinText(v), v, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", nil, fmt.Errorf("tool: %s: marshal output: %w", t.spec.Name, err)
	}
	return string(b), nil, nil
}

type approvalTool[In, Out any] struct {
	*funcTool[In, Out]
	need func(ctx context.Context, c *pipeline.ToolCall) (bool, error)
}

var _ pipeline.ApprovalRequirer = (*approvalTool[struct{}, string])(nil)

// NeedsApproval reports whether the call needs a human decision before it
// runs.
func (t *approvalTool[In, Out]) NeedsApproval(ctx context.Context, c *pipeline.ToolCall) (bool, error) {
	return t.need(ctx, c)
}

type callKey struct{}

// CallFromContext returns the tool call a [Func] tool's func is serving,
// for instance to pass [pipeline.ToolCall.IdempotencyKey] on to an external
// service. The call is the runner's: read it, do not keep it.
func CallFromContext(ctx context.Context) (*pipeline.ToolCall, bool) {
	c, ok := ctx.Value(callKey{}).(*pipeline.ToolCall)
	return c, ok
}
