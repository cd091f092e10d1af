package pipeline

import (
	"context"
	"sync/atomic"
)

// Attempt returns a copy of c for one attempt of the model call, for a
// model-stage middleware that passes a call on more than once, such as
// middleware/retry: a retry of a failed call, or a call of a fallback
// model. Pass the copy, not c, to the next stage.
//
// What the stages inside add to the copy stays with it: the observers
// they register ([ModelCall.Observe]) watch this attempt only, so each
// attempt is observed (traced) once, with its own outcome. When model is
// not nil, the core calls it instead of the agent's model; set the copy's
// Settings to name that model's settings. The copy's events reach the
// run's stream as c's do, and [ModelCall.Emitted] reports whether any did.
func (c *ModelCall) Attempt(model Model) *ModelCall {
	cp := *c
	cp.observers = c.observers[:len(c.observers):len(c.observers)]
	if model != nil {
		cp.model = model
	}
	if c.emit != nil {
		sent := new(atomic.Bool)
		parent := c.emit
		cp.sent = sent
		cp.emit = func(ev Event) {
			sent.Store(true)
			parent(ev)
		}
	}
	return &cp
}

// Emitted reports whether an event of the attempt c (made with
// [ModelCall.Attempt]) has been sent to the run's stream: once one has,
// the consumer saw part of this attempt's answer and the call is not to be
// made again. It reports false for a call that does not stream and for a
// call that is not an attempt.
func (c *ModelCall) Emitted() bool { return c.sent != nil && c.sent.Load() }

// Model returns the model the core calls for c: the one given to
// [ModelCall.Attempt], or else the agent's.
func (c *ModelCall) Model() Model {
	if c.model != nil {
		return c.model
	}
	if c.Agent == nil {
		return nil
	}
	return c.Agent.Model
}

// callModel calls the model of c; coreModel checked that it has one.
func (c *ModelCall) callModel(ctx context.Context) (*ModelResponse, error) {
	return c.Model().Respond(ctx, c)
}
