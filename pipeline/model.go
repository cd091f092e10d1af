package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/turnkit/turnkit/state"
)

// A Model produces one response to a model call. It is both what an
// [Agent] names as its model and the handler of a turn's model stage:
// model middleware ([Middleware.Model]) wraps the agent's Model in Models,
// as HTTP middleware wraps an http.Handler. Implementations live in
// model/openai (over openai-go) and model/scripted (for tests).
//
// A Model must be safe for concurrent use and must honour ctx. The
// response is non-nil if and only if the error is nil. The runner owns the
// response it gets back: it places the items of resp.Items in place, so a
// Model returns a new response (and Items slice) for every call and does
// not change it afterwards.
//
// When c.Stream is true the model should stream: it sends [TextDelta]
// events through c.Emit as they arrive and still returns the complete
// response, so every middleware sees the same thing in both modes.
type Model interface {
	Respond(ctx context.Context, c *ModelCall) (*ModelResponse, error)
}

// ModelFunc adapts a function to a [Model].
type ModelFunc func(ctx context.Context, c *ModelCall) (*ModelResponse, error)

// Respond calls f(ctx, c).
func (f ModelFunc) Respond(ctx context.Context, c *ModelCall) (*ModelResponse, error) {
	return f(ctx, c)
}

// A ModelCall is the request of the model stage.
type ModelCall struct {
	// Turn is the turn the call belongs to.
	Turn *Turn
	// Agent is the agent whose model is called.
	Agent *Agent
	// Instructions are the agent's system instructions for this call.
	Instructions string
	// Input is what the model sees: the context the run started from and
	// the run's items since, as an O(1) read-only view.
	Input state.Items
	// Tools are the function tools offered, handoffs included. The slice
	// is built once per agent per run and shared by its model calls (a
	// turn on which a [Condition] disabled some gets a slice without
	// them): treat it as read-only, and assign a new slice to offer other
	// tools.
	Tools []ToolSpec
	// Settings are the agent's model settings.
	Settings ModelSettings
	// Output describes the structured output the agent asks for; the zero
	// spec means plain text.
	Output OutputSpec
	// Stream asks the model to stream its text through Emit.
	Stream bool

	emit      func(Event)
	observers []ModelObserver
	model     Model        // set by Attempt: called instead of the agent's
	sent      *atomic.Bool // set by Attempt: an event of the attempt was sent
}

// Emit sends an event to the run's stream, if the run streams. It is safe
// to call from any goroutine while the call is in progress.
func (c *ModelCall) Emit(ev Event) {
	if c.emit != nil {
		c.emit(ev)
	}
}

// Streaming reports whether the call's events reach a consumer: the run
// streams ([Runner.Stream]), so what the model sends with Emit is
// delivered. It is false for a call whose events Emit drops, such as one
// a test or a program makes without a run: such a call may still ask for
// a stream (Stream), and a model may then skip making the events nobody
// reads, as a [TextDelta] per delta, whose boxing in an [Event]
// allocates. An attempt ([ModelCall.Attempt]) streams if its call does.
func (c *ModelCall) Streaming() bool { return c.emit != nil }

// A ModelObserver watches a model call that truly happens: the core calls
// it just before it calls the agent's model, with the context it makes the
// call with, and calls the func it returns (if not nil) once the model
// returned, with the model's response and error. It returns the context to
// make the call with.
type ModelObserver func(ctx context.Context) (context.Context, func(*ModelResponse, error))

// Observe adds obs to the observers of the call. A model-stage middleware
// that records the model call itself, such as tracing's span, observes it
// rather than acting around next.Respond, because a stage inside it may
// answer without calling the model: a blocking input guardrail that trips
// refuses the call, and then no observer is called. Observe must be called
// before the call is passed on. Observers are called in the order they
// were added, the funcs they return in reverse order (also when the model
// panics, with an error then).
func (c *ModelCall) Observe(obs ModelObserver) {
	if obs != nil {
		c.observers = append(c.observers, obs)
	}
}

// errModelPanicked is what a model call's observers hear of a model that
// panicked.
var errModelPanicked = errors.New("pipeline: the model panicked")

// respond calls the agent's model, with the call's observers around it.
func (c *ModelCall) respond(ctx context.Context) (*ModelResponse, error) {
	if len(c.observers) == 0 {
		return c.callModel(ctx)
	}
	ends := make([]func(*ModelResponse, error), 0, len(c.observers))
	for _, obs := range c.observers {
		var end func(*ModelResponse, error)
		if ctx, end = obs(ctx); end != nil {
			ends = append(ends, end)
		}
	}
	var resp *ModelResponse
	err := errModelPanicked
	defer func() {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](resp, err)
		}
	}()
	resp, err = c.callModel(ctx)
	return resp, err
}

// A ModelResponse is the model's answer. Items are in the order the model
// produced them; the runner gives them their positions after the model
// stage returns (in place: the runner owns the response), so a Model leaves
// Seq unset and returns a new response for every call.
type ModelResponse struct {
	ID    string
	Model string
	Items []state.Item
	Usage state.Usage
	// ContinuationLost, when set, is the stored response the call tried
	// to continue (previous_response_id) and the server no longer had:
	// the adapter sent the call again with the whole model input, once.
	// Tracing records it as a span attribute, logging as a field; the
	// adapter also emits a [ContinuationLost] event.
	ContinuationLost string
}

// ModelSettings are the per-agent settings passed to the model, those
// more than one provider has. Nil pointers and empty strings mean "the
// model's default". A provider's own settings (OpenAI's truncation and
// store, Anthropic's thinking budget, Gemini's safety settings …) are its
// adapter's options: an agent that needs its own gets a model value of
// its own. Each adapter's documentation says which of these it sends.
type ModelSettings struct {
	// Model names the model, e.g. "gpt-5-mini".
	Model             string
	Temperature       *float64
	TopP              *float64
	MaxOutputTokens   *int64
	ToolChoice        string // "auto", "required", "none" or a tool name
	ParallelToolCalls *bool
	// ReasoningEffort is the effort a reasoning model spends: "minimal",
	// "low", "medium" or "high" (the adapters map it to their API's
	// terms, or fail the call on one it has none for).
	ReasoningEffort string
	Metadata        map[string]string
}

// A ToolSpec describes a function tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object.
	Parameters json.RawMessage
	// Strict asks the model to follow the schema exactly.
	Strict bool
	// Hosted, when set, is the declaration of a tool the model's API runs
	// itself (web search, file search, code interpreter, remote MCP …), as
	// that API takes it, such as {"type":"web_search"} for the Responses
	// API. The model adapter sends it as given, and the runner never calls
	// the Tool: its calls come back as hosted-call items. An adapter that
	// cannot send it fails the model call with an error.
	Hosted json.RawMessage
	// Custom, when set, makes the tool a custom tool: the model calls it
	// with freeform text (the call's Arguments) instead of a JSON object,
	// and Custom is the input's format as the API takes it:
	// {"type":"text"}, or a grammar such as
	// {"type":"grammar","syntax":"lark","definition":"…"}. Parameters and
	// Strict are then unused. An adapter that cannot send it fails the
	// model call with an error.
	Custom json.RawMessage
}
