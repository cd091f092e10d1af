package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/turnkit/turnkit/state"
)

// handoffExtension is the [state.Run] extension key under which a run
// records the handoffs it took (see [Handoffs]).
const handoffExtension = "turnkit.handoffs"

// ErrNoHandoff means a run took no handoff of the kind asked for: none to
// the named agent ([HandoffInputAs]), or none from it ([HandoffOutputAs]).
var ErrNoHandoff = errors.New("pipeline: no such handoff in the run")

// An InputType is the Go type of a handoff's arguments ([Handoff.Input]):
// the JSON schema the model's transfer call follows, and the decoding of
// the call's arguments into a value of the type. Package tool builds one
// from a Go type (tool.Input), with the schema generation of its typed
// tools, and tool.Handoff builds a whole typed handoff.
//
// An InputType is built once and shared by every run: its methods must be
// safe for concurrent use, and InputSpec must return the same spec every
// time.
type InputType interface {
	// InputSpec describes the arguments to the model.
	InputSpec() InputSpec
	// Decode validates args against the schema and decodes them into a new
	// value of the type. Arguments that do not match are an
	// [*ArgumentError] whose Path says where; the runner reports a copy
	// with its Tool and CallID filled in.
	Decode(args string) (any, error)
}

// An InputSpec describes a handoff's arguments to the model.
type InputSpec struct {
	// Schema is the JSON schema of the arguments, an object. It is shared
	// and must not be modified.
	Schema json.RawMessage
	// Strict asks the model to follow the schema exactly.
	Strict bool
	// Type is the Go type Decode returns.
	Type reflect.Type
}

// A HandoffCall is a handoff about to be taken, as [Handoff.OnHandoff]
// gets it. It is valid only during the call.
type HandoffCall struct {
	// Turn is the turn that hands off; its Agent is the agent handing off.
	Turn *Turn
	// From and To are the agent handing off and the target.
	From, To *Agent
	// CallID and Arguments are the model's transfer call.
	CallID    string
	Arguments string
	// Input is the arguments decoded with the handoff's [InputType]; nil
	// without one.
	Input any
	// Output is From's answer beside the handoff call (see [Handoff]): its
	// final message decoded with From's output type, or the message text
	// for an agent without one; nil if the response had no message, or if
	// the message did not decode, when OutputErr says why (an
	// [*OutputError] or a [*RefusalError]).
	Output    any
	OutputErr error
}

// A HandoffError reports a handoff whose [Handoff.OnHandoff] callback
// failed. The run stops before the target agent runs; its state keeps
// the handoff call unanswered, and a resume takes the handoff again,
// calling the callback again.
type HandoffError struct {
	From, To string
	CallID   string
	Err      error
}

// Error says what failed, where, and why.
func (e *HandoffError) Error() string {
	return fmt.Sprintf("pipeline: handoff %s → %s call %s: %s", e.From, e.To, e.CallID, cause(e.Err))
}

// Unwrap returns the callback's error.
func (e *HandoffError) Unwrap() error { return e.Err }

// A HandoffRecord is a handoff a run took, as its state records it.
type HandoffRecord struct {
	// From and To name the agent that handed off and the target.
	From string `json:"from"`
	To   string `json:"to"`
	// CallID and Seq are the transfer call's ID and position.
	CallID string `json:"call_id"`
	Seq    int64  `json:"seq"`
	// Arguments are the call's arguments as the model sent them, valid
	// for the handoff's [InputType] if it has one.
	Arguments string `json:"arguments,omitempty"`
	// Output is the final message of From's response beside the call, and
	// HasOutput whether it had one; Refused reports a message that refused
	// From's output type.
	Output    string `json:"output,omitempty"`
	HasOutput bool   `json:"has_output,omitempty"`
	Refused   bool   `json:"refused,omitempty"`
}

// Handoffs returns the handoffs run took, in the order it took them. The
// records are kept in the run's state (under the extension key
// "turnkit.handoffs"), so a checkpoint decoded in another process gives
// the same list. An error means the record is not valid JSON.
func Handoffs(run *state.Run) ([]HandoffRecord, error) {
	if run == nil {
		return nil, nil
	}
	raw, ok := run.Extension(handoffExtension)
	if !ok {
		return nil, nil
	}
	var recs []HandoffRecord
	if err := json.Unmarshal(raw, &recs); err != nil {
		return nil, fmt.Errorf("pipeline: run %s: handoff record: %w", run.ID(), err)
	}
	return recs, nil
}

// recordHandoff adds rec to the run's handoff records, once per call
// position: a handoff taken again on resume is not recorded twice.
func recordHandoff(run *state.Run, rec HandoffRecord) error {
	recs, err := Handoffs(run)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(recs, func(r HandoffRecord) bool { return r.Seq == rec.Seq }) {
		return nil
	}
	raw, err := json.Marshal(append(recs, rec))
	if err != nil {
		return fmt.Errorf("pipeline: run %s: handoff record: %w", run.ID(), err)
	}
	run.SetExtension(handoffExtension, raw)
	return nil
}

// HandoffInputAs returns the input of the run's last handoff to the agent
// named to, decoded with that handoff's [InputType] into a T. start is the
// run's starting agent, as given to [Runner.Resume]; the handoff is found
// among the agents reachable from it. It reads the run's state alone, so
// it works on a live result's state and on a checkpoint decoded in
// another process alike.
//
// The error wraps [ErrNoHandoff] when the run took no handoff to the
// agent, is an [*OutputTypeError] when the handoff's input type is not T
// (a handoff without one has "no input"), an [*UnknownAgentError] when an
// agent of the record is not reachable from start, or the decoding's
// [*ArgumentError].
func HandoffInputAs[T any](start *Agent, run *state.Run, to string) (T, error) {
	var zero T
	rec, h, err := findHandoff(start, run, func(r HandoffRecord) bool { return r.To == to }, "to agent "+quoteJSON(to))
	if err != nil {
		return zero, err
	}
	want := reflect.TypeFor[T]().String()
	if h.Input == nil {
		return zero, &OutputTypeError{Agent: rec.From, Want: want, Got: "no input"}
	}
	v, err := h.decodeInput(rec.Arguments, rec.CallID)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, &OutputTypeError{Agent: rec.From, Want: want, Got: reflect.TypeOf(v).String()}
	}
	return t, nil
}

// HandoffOutputAs returns the answer the agent named from gave beside its
// last handoff call in the run: its final message, decoded with its output
// type into a T (OutputAs[string]'s rule applies to an agent without one).
// See [Handoff] for the rule it follows. start is as for
// [HandoffInputAs]; it reads the run's state alone.
//
// The error wraps [ErrNoHandoff] when the agent took no handoff, or took
// its last one without a message; is the [*RefusalError] or
// [*OutputError] of a message that refused or did not decode into the
// agent's output type (the handoff was taken all the same); otherwise
// errors are those of [DecodeOutput].
func HandoffOutputAs[T any](start *Agent, run *state.Run, from string) (T, error) {
	var zero T
	rec, _, err := findHandoff(start, run, func(r HandoffRecord) bool { return r.From == from }, "from agent "+quoteJSON(from))
	if err != nil {
		return zero, err
	}
	if !rec.HasOutput {
		return zero, fmt.Errorf("%w: agent %q handed off without a message in run %s", ErrNoHandoff, from, run.ID())
	}
	a := start.find(from)
	if rec.Refused {
		return zero, &RefusalError{Agent: a.Name, Refusal: rec.Output}
	}
	v, err := decodeOutput(a, rec.Output)
	if err != nil {
		return zero, err
	}
	return valueAs[T](a.Name, v, rec.Output)
}

// findHandoff returns the last record of run that match accepts, and the
// handoff it took; what says which, for the error.
func findHandoff(start *Agent, run *state.Run, match func(HandoffRecord) bool, what string) (HandoffRecord, *Handoff, error) {
	if start == nil || run == nil {
		return HandoffRecord{}, nil, errors.New("pipeline: handoff: nil agent or run")
	}
	recs, err := Handoffs(run)
	if err != nil {
		return HandoffRecord{}, nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		rec := recs[i]
		if !match(rec) {
			continue
		}
		from := start.find(rec.From)
		if from == nil {
			return rec, nil, &UnknownAgentError{Agent: rec.From}
		}
		for j := range from.Handoffs {
			if h := &from.Handoffs[j]; h.Agent != nil && h.Agent.Name == rec.To {
				return rec, h, nil
			}
		}
		return rec, nil, &UnknownAgentError{Agent: rec.To}
	}
	return HandoffRecord{}, nil, fmt.Errorf("%w: none %s in run %s", ErrNoHandoff, what, run.ID())
}

// decodeInput decodes a transfer call's arguments with the handoff's input
// type; nil, nil without one.
func (h *Handoff) decodeInput(args, callID string) (any, error) {
	if h.Input == nil {
		return nil, nil
	}
	v, err := h.Input.Decode(args)
	if err == nil {
		return v, nil
	}
	name := h.toolName()
	if shared, ok := errors.AsType[*ArgumentError](err); ok {
		// An input type may return one error value from many calls at
		// once: fill in the call on a copy, never on its value.
		ae := new(*shared)
		if ae.Tool == "" {
			ae.Tool = name
		}
		if ae.CallID == "" {
			ae.CallID = callID
		}
		return nil, ae
	}
	return nil, &ArgumentError{Tool: name, CallID: callID, Err: err}
}

// checkHandoff validates the first handoff call of a turn before anything
// of the turn runs: its arguments against the handoff's input type (an
// error refuses the handoff), and the response's final message, if any,
// against the agent's output type (an error is noted in the call, and
// the handoff is taken all the same). It returns the call the handoff will
// be taken with.
func checkHandoff(t *Turn, h *Handoff, call state.Item, hasMessage bool, final string) (*HandoffCall, error) {
	hc := &HandoffCall{Turn: t, From: t.Agent, To: h.Agent, CallID: call.CallID(), Arguments: call.Text()}
	var err error
	if hc.Input, err = h.decodeInput(hc.Arguments, hc.CallID); err != nil {
		return nil, err
	}
	if !hasMessage {
		return hc, nil
	}
	a := t.Agent
	if a.Output == nil {
		hc.Output = final
		return hc, nil
	}
	if refusal, ok := responseRefusal(t.Response); ok {
		hc.OutputErr = &RefusalError{Agent: a.Name, Refusal: refusal}
		return hc, nil
	}
	hc.Output, hc.OutputErr = decodeOutput(a, final)
	return hc, nil
}

// takeHandoff takes a turn's handoff: it records it in the run, calls its
// callback, answers the call, and applies its input filter, the last
// steps before the target agent runs. The call is answered only once the
// callback passed, so a run stopped by the callback resumes into the
// handoff again rather than into a new model call.
func (r *Runner) takeHandoff(ctx context.Context, t *Turn, hand handoffStep, hasMessage bool, final string) error {
	h, hc := hand.to, hand.call
	rec := HandoffRecord{From: t.Agent.Name, To: h.Agent.Name, CallID: hc.CallID, Seq: hand.call0.item.Seq(), Arguments: hc.Arguments}
	if hasMessage {
		rec.Output, rec.HasOutput = final, true
		if re, ok := hc.OutputErr.(*RefusalError); ok {
			rec.Output, rec.Refused = re.Refusal, true
		}
	}
	if err := recordHandoff(t.Run, rec); err != nil {
		return err
	}
	if h.OnHandoff != nil && !hand.call0.done {
		if err := h.OnHandoff(ctx, hc); err != nil {
			return &HandoffError{From: t.Agent.Name, To: h.Agent.Name, CallID: hc.CallID, Err: err}
		}
	}
	if !hand.call0.done {
		if err := recordHandoffOutput(t, hand.call0, `{"assistant":`+quoteJSON(h.Agent.Name)+`}`); err != nil {
			return err
		}
	}
	return r.handoff(ctx, t, h)
}
