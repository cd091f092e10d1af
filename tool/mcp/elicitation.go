package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// WithElicitation lets the servers ask the user for input during a tool
// call (MCP elicitation, elicitation/create, in form mode), pausing the
// run as an approval does: the call ends, the turn ends in an
// interruption whose [state.Approval.Elicitation] holds the server, the
// message and the requested schema, and the run's state can be saved and
// resumed in any process. Answer with [Accept] (which checks the content
// against the schema), or state.Run.AnswerElicitation with state.Decline
// or state.Cancel, then resume: the tool is called again, and when its
// server asks the same thing (the same message and schema) it gets the
// recorded answer; a different request pauses the run again.
//
// To end the call, the client cancels it (notifications/cancelled) and
// answers the request with "cancel". So the server sees the call twice,
// or more if it asks more than once: with the same arguments and the same
// idempotency key ([MetaIdempotencyKey]). That is harmless for a tool
// that asks before it acts, or that recognises the key; for a tool with
// effects before its question, answer in-process instead with
// [WithElicitationHandler], which keeps the call open.
//
// While requests for input are served (this option or
// WithElicitationHandler), the calls to one server are sent one at a
// time, so that a request is known to come from the call in flight;
// calls to different servers still run in parallel.
//
// Elicitation is off by default: without this option or a handler the
// client does not declare the capability, which the protocol requires of
// a server before it asks (the reference server does not even list its
// elicitation tools then); a server that asks anyway gets the Go SDK's
// JSON-RPC error (-32602, "client does not support elicitation"). A
// request in URL mode, or one made outside a call of a run, is declined.
func WithElicitation() Option {
	return optionFunc(func(c *config) { c.elicit, c.onElicit = elicitPause, nil })
}

// An ElicitationHandler answers a server's request for input in-process,
// while the tool call waits: call is the call the request came from, req
// the request. It returns the user's action and, with [state.Accept], the
// content (a JSON object fitting req.Schema); an error fails the request
// (the server gets a JSON-RPC error). It must be safe for concurrent use.
type ElicitationHandler func(ctx context.Context, call *pipeline.ToolCall, req state.Elicitation) (action state.ElicitAction, content map[string]any, err error)

// WithElicitationHandler serves the servers' requests for input with h,
// without pausing the run: the alternative to [WithElicitation] for tools
// that must not be called twice. The Go SDK checks accepted content
// against the request's schema (and fills in its defaults) before the
// server gets it. A nil h turns elicitation off.
func WithElicitationHandler(h ElicitationHandler) Option {
	return optionFunc(func(c *config) {
		c.elicit, c.onElicit = elicitHandle, h
		if h == nil {
			c.elicit = elicitOff
		}
	})
}

// How the toolset serves requests for input.
const (
	elicitOff = iota
	elicitPause
	elicitHandle
)

// An elicitCall is the call in flight on a server that serves requests
// for input; what the requests did to it is read once it returned.
type elicitCall struct {
	call   *pipeline.ToolCall
	cancel context.CancelFunc

	mu     sync.Mutex        // the server's requests and the call's return race
	paused state.Elicitation // the request that paused it
	err    error             // a recorded answer that no longer applies
}

// stop ends the call: a request paused it (e set) or its recorded answer
// no longer applies (err set).
func (ec *elicitCall) stop(e state.Elicitation, err error) {
	ec.mu.Lock()
	ec.paused, ec.err = e, err
	ec.mu.Unlock()
	ec.cancel()
}

// outcome returns what stopped the call, if anything.
func (ec *elicitCall) outcome() (state.Elicitation, error) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.paused, ec.err
}

// enter waits for the server's one call slot and makes c the call in
// flight; the returned context ends the call when a request pauses it.
// leave gives the slot back.
func (c *conn) enter(ctx context.Context, call *pipeline.ToolCall) (context.Context, *elicitCall, error) {
	select {
	case c.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	cctx, cancel := context.WithCancel(ctx)
	ec := &elicitCall{call: call, cancel: cancel}
	c.mu.Lock()
	c.cur = ec
	c.mu.Unlock()
	return cctx, ec, nil
}

func (c *conn) leave(ec *elicitCall) {
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
	ec.cancel()
	<-c.slot
}

// elicit serves a server's elicitation/create (see WithElicitation).
func (c *conn) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	decline := &sdk.ElicitResult{Action: state.Decline.String()}
	p := req.Params
	if p == nil || p.Mode == "url" || p.URL != "" {
		return decline, nil
	}
	e := state.Elicitation{Server: c.srv.Name, Message: p.Message}
	if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema) // a map: its keys sorted, so one request reads the same every time
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: elicitation schema: %w", c.srv.Name, err)
		}
		e.Schema = string(b)
	}
	c.mu.Lock()
	ec := c.cur
	c.mu.Unlock()
	if ec == nil || ec.call.Turn == nil || ec.call.Turn.Run == nil {
		return decline, nil
	}
	call := ec.call
	if c.onElicit != nil {
		action, content, err := c.onElicit(ctx, call, e)
		if err != nil {
			return nil, err
		}
		if _, err := action.MarshalText(); err != nil {
			return nil, fmt.Errorf("mcp: server %q: elicitation handler: %w", c.srv.Name, err)
		}
		return &sdk.ElicitResult{Action: action.String(), Content: content}, nil
	}
	d, ok := call.Turn.Run.ElicitationAnswerFor(call.Name, call.CallID, e)
	if !ok {
		ec.stop(e, nil)
		return &sdk.ElicitResult{Action: state.Cancel.String()}, nil
	}
	if err := d.Check(call.CallID, call.Name, call.Arguments); err != nil {
		ec.stop(state.Elicitation{}, err)
		return &sdk.ElicitResult{Action: state.Cancel.String()}, nil
	}
	res := &sdk.ElicitResult{Action: d.Answer.Action.String()}
	if d.Answer.Content != "" {
		if err := json.Unmarshal([]byte(d.Answer.Content), &res.Content); err != nil {
			return nil, fmt.Errorf("mcp: server %q: recorded answer of call %s: %w", c.srv.Name, call.CallID, err)
		}
	}
	return res, nil
}

// Accept answers the request for input that the pending call callID of
// run waits for (see [WithElicitation]) with content, after checking it
// against the request's schema: content that does not fit fails with a
// [*state.DecisionError] wrapping [state.ErrInvalidAnswer], and records
// nothing. Other errors are those of state.Run.AnswerElicitation. Decline
// and cancel need no check: call run.AnswerElicitation(callID,
// state.Decline, "") or state.Cancel.
func Accept(run *state.Run, callID string, content map[string]any) error {
	b, err := json.Marshal(content)
	if err != nil {
		return &state.DecisionError{RunID: run.ID(), CallID: callID, Err: fmt.Errorf("%w: %w", state.ErrInvalidAnswer, err)}
	}
	if content == nil {
		b = []byte("{}")
	}
	if a, ok := run.PendingCall(callID); ok && a.IsElicitation() {
		if err := validate(a.Elicitation.Schema, b); err != nil {
			return &state.DecisionError{RunID: run.ID(), CallID: callID, Tool: a.Tool, Err: fmt.Errorf("%w: %w", state.ErrInvalidAnswer, err)}
		}
	}
	return run.AnswerElicitation(callID, state.Accept, string(b))
}

// CheckAnswer checks content, an answer to accept req with, against the
// request's schema, as [Accept] does, for callers that record answers
// another way (such as riverrun's Answer decisions).
func CheckAnswer(req state.Elicitation, content map[string]any) error {
	b, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("%w: %w", state.ErrInvalidAnswer, err)
	}
	if err := validate(req.Schema, b); err != nil {
		return fmt.Errorf("%w: %w", state.ErrInvalidAnswer, err)
	}
	return nil
}

// validate checks the JSON value content against the JSON schema ("" for
// none), as the Go SDK checks an accepted answer before it sends it.
func validate(schema string, content []byte) error {
	if schema == "" {
		return nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return fmt.Errorf("requested schema: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("requested schema: %w", err)
	}
	var v map[string]any // as decoded JSON: numbers are float64
	if err := json.Unmarshal(content, &v); err != nil {
		return err
	}
	return resolved.Validate(v)
}
