package tool

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/turnkit/turnkit/pipeline"
)

// ErrNotStrict means an output type cannot be described in strict mode.
// It is wrapped by [*StrictError].
var ErrNotStrict = errors.New("tool: output type cannot be strict")

// A StrictError reports an output type that strict mode cannot describe,
// and where: Path is the JSON path of the first such value ("" for the
// whole output), such as "meta" for a map field. [AllowNonStrict] sends
// such a type without strict mode instead.
type StrictError struct {
	Type   string // the output type, as Go prints it
	Path   string
	Reason string
}

// Error names the type, the field's path and why strict mode cannot express it.
func (e *StrictError) Error() string {
	where := "field " + e.Path
	if e.Path == "" {
		where = "the whole value"
	}
	return fmt.Sprintf("tool: output type %s: %s: %s in strict mode (or use tool.AllowNonStrict)", e.Type, where, e.Reason)
}

// Unwrap returns [ErrNotStrict].
func (e *StrictError) Unwrap() error { return ErrNotStrict }

// An OutputOption configures an output type made by [Output].
type OutputOption interface{ applyOutput(*outputConfig) }

type outputOptionFunc func(*outputConfig)

func (f outputOptionFunc) applyOutput(c *outputConfig) { f(c) }

type outputConfig struct {
	name, description string
	allowNonStrict    bool
}

// AllowNonStrict sends an output type that strict mode cannot describe
// (a map, an interface, json.RawMessage) without strict mode, instead of
// refusing it. The model is then asked, not forced, to follow the schema;
// the output is validated against it all the same. A type strict mode can
// describe is sent strict either way.
func AllowNonStrict() OutputOption {
	return outputOptionFunc(func(c *outputConfig) { c.allowNonStrict = true })
}

// OutputName sets the schema's name the model sees (default: the type's
// name, or "output" for an unnamed type). A later call replaces an earlier
// one; an empty name is ignored.
func OutputName(name string) OutputOption {
	return outputOptionFunc(func(c *outputConfig) {
		if name != "" {
			c.name = name
		}
	})
}

// OutputDescription sets the schema's description the model sees (default
// none). A later call replaces an earlier one.
func OutputDescription(description string) OutputOption {
	return outputOptionFunc(func(c *outputConfig) { c.description = description })
}

// Output returns T as the output type of an agent ([pipeline.Agent.Output]):
// the model is asked for JSON that follows T's schema, and the final output
// is validated and decoded into a T, which [pipeline.OutputAs] returns.
//
// T must be a struct type or a pointer to one. Its schema is generated
// here, once, exactly as for the input of a [Func] tool (the same shape and
// the same `jsonschema` tags; see the package documentation), and it is
// strict: a type strict mode cannot describe (a map, an interface value)
// is refused with a [*StrictError] naming the field, unless
// [AllowNonStrict] is given. A type that has no schema at all (not a
// struct, a recursive type, a channel field) is a [*TypeError].
//
// Decoding is as strict as for tool arguments: unknown and missing
// properties, wrong types and values out of bounds are a
// [*pipeline.OutputError] with the JSON path of the first bad value, and a
// syntax error with its byte offset. Only null is accepted for a slice or
// a map, as encoding/json writes a nil one, so that a terminal [Func] tool
// whose result type is T can end the run with its result.
//
// The returned output type is safe for concurrent use.
func Output[T any](opts ...OutputOption) (pipeline.OutputType, error) {
	var cfg outputConfig
	for _, o := range opts {
		if o != nil {
			o.applyOutput(&cfg)
		}
	}
	t := reflect.TypeFor[T]()
	s, err := reflectSchema(t, "output", true)
	if err != nil {
		return nil, err
	}
	if !s.strict && !cfg.allowNonStrict {
		return nil, &StrictError{Type: t.String(), Path: s.notStrict, Reason: s.notStrictWhy}
	}
	name := cfg.name
	if name == "" {
		name = schemaName(t)
	}
	return &outputType[T]{spec: pipeline.OutputSpec{
		Name: name, Description: cfg.description, Schema: s.json, Strict: s.strict, Type: t,
	}, schema: s}, nil
}

// MustOutput is like [Output] but panics on an error: for output types
// declared with their agents, where an error is a programming mistake.
func MustOutput[T any](opts ...OutputOption) pipeline.OutputType {
	o, err := Output[T](opts...)
	if err != nil {
		panic(err.Error())
	}
	return o
}

type outputType[T any] struct {
	spec   pipeline.OutputSpec
	schema *schema
}

// OutputSpec returns the output's spec. Schema is shared and must not be
// modified.
func (o *outputType[T]) OutputSpec() pipeline.OutputSpec { return o.spec }

// Decode validates text and decodes it into a new T.
func (o *outputType[T]) Decode(text string) (any, error) {
	if strings.TrimSpace(text) == "" {
		return nil, &pipeline.OutputError{Raw: text, Err: errors.New("empty output, want a JSON object")}
	}
	var v T
	if ae := o.schema.decode(text, &v); ae != nil {
		return nil, &pipeline.OutputError{Raw: text, Path: ae.Path, Offset: ae.Offset, Err: ae.Err}
	}
	return v, nil
}

// schemaName returns a name the API accepts for t's schema.
func schemaName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i] // a generic type's name without its arguments
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
	if name == "" {
		return "output"
	}
	return name[:min(len(name), 64)]
}
