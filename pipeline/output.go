package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/turnkit/turnkit/state"
)

// An OutputType is the Go type of an agent's final output ([Agent.Output]):
// the JSON schema the model is asked to follow, and the decoding of the
// final text into a value of the type. Package tool builds one from a Go
// type (tool.Output), with the schema generation of its typed tools.
//
// An OutputType is built once and shared by every run of the agent: its
// methods must be safe for concurrent use, and OutputSpec must return the
// same spec every time.
type OutputType interface {
	// OutputSpec describes the output to the model.
	OutputSpec() OutputSpec
	// Decode validates text against the schema and decodes it into a new
	// value of the type (never a pointer the caller shares). A text that
	// does not match is an [*OutputError] whose Path says where; the
	// runner reports a copy with its Agent and Raw filled in, and never
	// changes the value Decode returned.
	Decode(text string) (any, error)
}

// An OutputSpec describes an agent's structured output to the model. The
// OpenAI adapter sends it as the Responses API's text.format (json_schema)
// and as Chat Completions' response_format. The zero OutputSpec (no Schema)
// means plain text.
type OutputSpec struct {
	// Name names the schema, as the API wants it (letters, digits, _ and -,
	// at most 64).
	Name        string
	Description string
	// Schema is the JSON schema of the output, an object. It is shared and
	// must not be modified.
	Schema json.RawMessage
	// Strict asks the model to follow the schema exactly.
	Strict bool
	// Type is the Go type Decode returns.
	Type reflect.Type
}

// A ResultTyper is a [Tool] that says the Go type of its result, so that a
// terminal tool (see [StopOnFirstTool], [StopAtTools]) can be checked
// against its agent's output type before a run starts. Tools made by
// package tool's Func are ResultTypers. A tool that is not one is checked
// when its output is decoded, at run time.
type ResultTyper interface {
	ResultType() reflect.Type
}

// An OutputError reports a final output that does not decode into its
// agent's output type: text that is not JSON (Offset is the byte offset of
// the syntax error), or a value that does not match the schema (Path is
// the JSON path of the first bad value, such as "items[2].qty"; "" for the
// whole value).
//
// The runner returns it when a turn's final output does not decode; the
// run is then not finished, its state keeps the turn's items, and a
// resume calls the model again. Raw is the text as the model (or the
// terminal tool) produced it.
type OutputError struct {
	Agent  string
	Raw    string
	Path   string
	Offset int64
	Err    error
}

// Error names the agent, the JSON path or byte offset, and the cause.
func (e *OutputError) Error() string {
	where := e.Path
	if where == "" {
		where = "output"
	}
	if e.Offset > 0 {
		where += " at offset " + strconv.FormatInt(e.Offset, 10)
	}
	return fmt.Sprintf("pipeline: agent %q final output: %s: %v", e.Agent, where, e.Err)
}

// Unwrap returns the cause; errors.Is(err, ErrInvalidOutput) also reports
// true.
func (e *OutputError) Unwrap() []error { return []error{ErrInvalidOutput, e.Err} }

// A RefusalError reports that the model refused to produce the structured
// output of an agent: its final message is a refusal, which is not
// decoded. The run is not finished; its state keeps the refusal message.
type RefusalError struct {
	Agent   string
	Refusal string
}

// Error names the agent and quotes the refusal.
func (e *RefusalError) Error() string {
	return fmt.Sprintf("pipeline: agent %q: model refused: %s", e.Agent, e.Refusal)
}

// Unwrap returns [ErrRefused].
func (e *RefusalError) Unwrap() error { return ErrRefused }

// An OutputTypeError reports two types that should be one: the type asked
// of [OutputAs] and the output type of the agent that produced the final
// output, or (Tool set) a terminal tool's result type and its agent's
// output type, found by [Agent.Validate]. A type is written as Go prints
// it; an agent without an output type has "text".
type OutputTypeError struct {
	Agent string
	Tool  string
	Want  string
	Got   string
}

// Error names the agent, the terminal tool, if any, and the two types.
func (e *OutputTypeError) Error() string {
	if e.Tool != "" {
		return fmt.Sprintf("pipeline: agent %q: terminal tool %q returns %s, not the output type %s", e.Agent, e.Tool, e.Got, e.Want)
	}
	return fmt.Sprintf("pipeline: final output of agent %q is %s, not %s", e.Agent, e.Got, e.Want)
}

// Unwrap returns [ErrOutputType].
func (e *OutputTypeError) Unwrap() error { return ErrOutputType }

// OutputAs returns the final output of res as a T: the value decoded into
// the output type of the agent that produced it (res.lastAgent). Each
// call returns the value the run decoded, so a T holding pointers, slices
// or maps shares them with other calls; copy before modifying.
//
// The error is an [*OutputTypeError] naming that agent when its output
// type is not T (an agent without one produces text: OutputAs[string]
// returns it), the run's own [*OutputError] or [*RefusalError] when the
// final output could not be decoded, or [ErrNoFinalOutput] when the run
// did not finish. Streamed runs give the same value, through
// [RunCompleted].Result.
func OutputAs[T any](res *Result) (T, error) {
	var zero T
	switch {
	case res == nil:
		return zero, ErrNoFinalOutput
	case res.outputErr != nil:
		return zero, res.outputErr
	case res.run == nil:
		return zero, ErrNoFinalOutput
	}
	if _, done := res.run.FinalOutput(); !done {
		return zero, ErrNoFinalOutput
	}
	return valueAs[T](res.outputAgent, res.output, res.finalOutput)
}

// DecodeOutput returns the final output of a finished run as a T, from its
// state alone: a checkpoint decoded in another process, say. start is the
// run's starting agent, as given to [Runner.Resume]; the final output is
// decoded with the output type of the run's current agent, found among the
// agents reachable from start. The state keeps the raw final text, so the
// value is the one [OutputAs] returned for the live run. Errors are those
// of OutputAs, and [*UnknownAgentError] when the agent is not reachable.
func DecodeOutput[T any](start *Agent, run *state.Run) (T, error) {
	var zero T
	if start == nil || run == nil {
		return zero, errors.New("pipeline: decode output: nil agent or run")
	}
	text, done := run.FinalOutput()
	if !done {
		return zero, ErrNoFinalOutput
	}
	a := start.find(run.Agent())
	if a == nil {
		return zero, &UnknownAgentError{Agent: run.Agent()}
	}
	v, err := decodeOutput(a, text)
	if err != nil {
		return zero, err
	}
	return valueAs[T](a.Name, v, text)
}

func valueAs[T any](agent string, v any, text string) (T, error) {
	var zero T
	if v == nil {
		if s, ok := any(text).(T); ok {
			return s, nil
		}
		return zero, &OutputTypeError{Agent: agent, Want: reflect.TypeFor[T]().String(), Got: "text"}
	}
	t, ok := v.(T)
	if !ok {
		return zero, &OutputTypeError{Agent: agent, Want: reflect.TypeFor[T]().String(), Got: reflect.TypeOf(v).String()}
	}
	return t, nil
}

// decodeOutput decodes text with a's output type; nil, nil if a has none.
func decodeOutput(a *Agent, text string) (any, error) {
	if a.Output == nil {
		return nil, nil
	}
	v, err := a.Output.Decode(text)
	if err == nil {
		return v, nil
	}
	if shared, ok := errors.AsType[*OutputError](err); ok {
		// An output type may return one error value from many runs at
		// once: fill in the run on a copy, never on its value.
		oe := new(*shared)
		if oe.Agent == "" {
			oe.Agent = a.Name
		}
		if oe.Raw == "" {
			oe.Raw = text
		}
		return nil, oe
	}
	return nil, &OutputError{Agent: a.Name, Raw: text, Err: err}
}

// setFinal ends the turn with text as the final output, decoded into the
// agent's output type. A final message that is a refusal is a
// [*RefusalError], never decoded.
func setFinal(t *Turn, text string, message bool) error {
	a := t.Agent
	if a.Output != nil {
		if message {
			if refusal, ok := responseRefusal(t.Response); ok {
				return &RefusalError{Agent: a.Name, Refusal: refusal}
			}
		}
		v, err := decodeOutput(a, text)
		if err != nil {
			return err
		}
		t.Next = NextStep{Kind: NextFinalOutput, Output: text, Value: v}
		return nil
	}
	t.Next = NextStep{Kind: NextFinalOutput, Output: text}
	return nil
}

// setOutput records the run's final output on the result: its text, and
// its value decoded with agent's output type (value, when the turn decoded
// it already).
func (r *Result) setOutput(agent *Agent, text string, value any) error {
	if value == nil && agent.Output != nil {
		var err error
		if value, err = decodeOutput(agent, text); err != nil {
			return err
		}
	}
	r.finalOutput, r.output, r.outputAgent = text, value, agent.Name
	return nil
}

// responseRefusal returns the refusal of the response's last assistant
// message, if that message refuses.
func responseRefusal(resp *ModelResponse) (string, bool) {
	if resp == nil {
		return "", false
	}
	for i := len(resp.Items) - 1; i >= 0; i-- {
		it := resp.Items[i]
		if it.Kind() != state.KindAssistantMessage {
			continue
		}
		return refusalOf(it)
	}
	return "", false
}

// refusalOf reads a message's refusal content parts.
func refusalOf(it state.Item) (string, bool) {
	raw := it.Raw()
	if !bytes.Contains(raw, []byte(`"refusal"`)) {
		return "", false // the common case, without parsing
	}
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Content) == 0 || m.Content[0] != '[' {
		return "", false
	}
	var parts []struct {
		Type    string `json:"type"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", false
	}
	var refusal string
	found := false
	for _, p := range parts {
		if p.Type == "refusal" {
			refusal += p.Refusal
			found = true
		}
	}
	return refusal, found
}

// Validate checks the agents reachable from a through handoffs: the
// result type of each tool that may end a run with [StopOnFirstTool] or
// [StopAtTools] (a [ResultTyper]) must be able to be its agent's output
// type. It returns an [*OutputTypeError] naming the agent and the tool.
// A result type can be the output type if it is that type or a pointer to
// it (either way), or raw JSON text (string, []byte, json.RawMessage),
// which is decoded at run time. The output of a [DecideToolUse] decider
// is decoded at run time.
//
// The runner validates the agent before a run starts or resumes, so a
// mismatch fails before any model call; call Validate when the agents are
// built to fail earlier.
func (a *Agent) Validate() error {
	if a == nil {
		return nil
	}
	if len(a.Handoffs) == 0 {
		return a.validateOutput()
	}
	var path [8]*Agent // the agents on the way, on the stack for most graphs
	return a.validateFrom(path[:0])
}

// validateFrom validates a and the agents it hands off to, skipping those
// in seen.
func (a *Agent) validateFrom(seen []*Agent) error {
	if a == nil || slices.Contains(seen, a) {
		return nil
	}
	if err := a.validateOutput(); err != nil {
		return err
	}
	seen = append(seen, a)
	for i := range a.Handoffs {
		if err := a.Handoffs[i].Agent.validateFrom(seen); err != nil {
			return err
		}
	}
	return nil
}

var rawJSONTypes = [...]reflect.Type{
	reflect.TypeFor[string](), reflect.TypeFor[[]byte](), reflect.TypeFor[json.RawMessage](),
}

func (a *Agent) validateOutput() error {
	if a.Output == nil || (a.ToolUse.mode != toolUseStopFirst && a.ToolUse.mode != toolUseStopAt) {
		return nil
	}
	want := a.Output.OutputSpec().Type
	if want == nil {
		return nil
	}
	for _, tl := range a.Tools {
		rt, ok := tl.(ResultTyper)
		if !ok {
			continue
		}
		name := tl.Spec().Name
		if !a.ToolUse.MayEnd(name) {
			continue
		}
		got := rt.ResultType()
		if got == nil || compatible(got, want) {
			continue
		}
		return &OutputTypeError{Agent: a.Name, Tool: name, Want: want.String(), Got: got.String()}
	}
	return nil
}

func compatible(got, want reflect.Type) bool {
	for _, raw := range rawJSONTypes {
		if got == raw {
			return true
		}
	}
	deref := func(t reflect.Type) reflect.Type {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return t
	}
	return deref(got) == deref(want)
}

// outputSpec returns the spec of a's output; the zero spec for text.
func outputSpec(a *Agent) OutputSpec {
	if a.Output == nil {
		return OutputSpec{}
	}
	return a.Output.OutputSpec()
}

// noteOutputErr keeps a turn's output error (a decode failure, a refusal)
// for [OutputAs].
func (r *Result) noteOutputErr(err error) {
	if oe, ok := errors.AsType[*OutputError](err); ok {
		r.outputErr = oe
	} else if re, ok := errors.AsType[*RefusalError](err); ok {
		r.outputErr = re
	}
}
