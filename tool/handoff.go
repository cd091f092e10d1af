package tool

import (
	"context"
	"fmt"
	"reflect"

	"github.com/turnkit/turnkit/pipeline"
)

// Input returns T as the input type of a handoff ([pipeline.Handoff.Input]):
// the model's transfer call carries arguments that follow T's schema, and
// they are validated and decoded into a T exactly as a [Func] tool's
// arguments are, a mismatch being a [*pipeline.ArgumentError] with the JSON
// path of the first bad value.
//
// T must be a struct type or a pointer to one; its schema is generated
// here, once, as for [Func]'s input, and is sent strict when the type
// allows it. A type that has no schema (not a struct, a recursive type, a
// channel field) is a [*TypeError].
// The returned input type is safe for concurrent use.
func Input[T any]() (pipeline.InputType, error) {
	t := reflect.TypeFor[T]()
	s, err := newSchema(t)
	if err != nil {
		return nil, err
	}
	return &inputType[T]{spec: pipeline.InputSpec{Schema: s.json, Strict: s.strict, Type: t}, schema: s}, nil
}

// MustInput is like [Input] but panics on an error: for input types
// declared with their handoffs, where an error is a programming mistake.
func MustInput[T any]() pipeline.InputType {
	in, err := Input[T]()
	if err != nil {
		panic(err.Error())
	}
	return in
}

type inputType[T any] struct {
	spec   pipeline.InputSpec
	schema *schema
}

// InputSpec returns the input's spec. Schema is shared and must not be
// modified.
func (in *inputType[T]) InputSpec() pipeline.InputSpec { return in.spec }

// Decode validates args and decodes them into a new T.
func (in *inputType[T]) Decode(args string) (any, error) {
	var v T
	if ae := in.schema.decode(args, &v); ae != nil {
		return nil, ae
	}
	return v, nil
}

// Handoff returns a handoff to agent whose transfer call carries a T
// (see [Input]) and that calls fn with the decoded T when the handoff is
// taken, before agent runs ([pipeline.Handoff.OnHandoff]). A nil fn only
// declares the input; read it back with [pipeline.HandoffInputAs]. fn's
// error stops the run with a [*pipeline.HandoffError]. Set the other
// fields of the returned value (ToolName, Description, InputFilter) as
// needed.
//
// Handoff panics, with a "tool: " message, on a wiring mistake: a nil
// agent, or a T that [Input] refuses.
func Handoff[T any](agent *pipeline.Agent, fn func(ctx context.Context, in T) error) pipeline.Handoff {
	if agent == nil {
		panic("tool: Handoff called with a nil agent")
	}
	in, err := Input[T]()
	if err != nil {
		panic(fmt.Sprintf("tool: Handoff to %q: %v", agent.Name, err))
	}
	h := pipeline.Handoff{Agent: agent, Input: in}
	if fn != nil {
		h.OnHandoff = func(ctx context.Context, c *pipeline.HandoffCall) error {
			v, _ := c.Input.(T) // the input type above decoded it
			return fn(ctx, v)
		}
	}
	return h
}
