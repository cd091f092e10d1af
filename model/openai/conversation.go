package openai

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/openai/openai-go/v3"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Server-side conversations. By default every model call sends the run's
// whole history. With [ChainResponses] or [InConversation] the server keeps
// the conversation, and each call sends only the items the server has not
// seen: the tool outputs and input added since the last response, O(new
// items) instead of O(history).
//
// One way per mode, across the runs of a session (one run per user
// message):
//
//   - the response chain: [ChainResponses] on every run, and the
//     persistence middleware with WithContinuation. The session remembers
//     the last response of each finished run at its position
//     ([pipeline.Continuation]), and the next run's first call sends
//     previous_response_id and only the run's own input. If the server no
//     longer has that response (400 previous_response_not_found: expired,
//     deleted, or not stored), the call is sent again once with the whole
//     input, and says so: a [pipeline.ContinuationLost] event, the
//     response's ContinuationLost (the turnkit.continuation.lost span
//     attribute, the continuation_lost log field);
//   - a conversation object: [InConversation] with the same ID on every
//     run; the conversation holds what earlier runs added.
//
// [pipeline.Result.LastResponseID] gives the last response's ID. A
// response named by hand ([ChainFrom]) starts a chain: it is taken to
// hold the history the run started from, so only the run's own items are
// sent with it, never the whole history again, and the run's later calls
// chain on their own responses.
//
// What the server holds is kept in the run's state (the extension
// [ServerStateKey]), so a checkpoint resumes in any process where it left
// off, and a session still stores every item. A handoff keeps the
// server's conversation (the next agent's instructions and tools go with
// each request); a handoff input filter that replaces the history makes
// the next call send the whole new history (and, when chaining, start a
// new chain).

// ServerStateKey is the run-state extension key under which the adapter
// keeps what the server holds of a run's conversation.
const ServerStateKey = "openai.server_state"

// serverState is the extension's value.
type serverState struct {
	// Chain links each call to the previous response.
	Chain bool `json:"chain,omitempty"`
	// Conversation is the ID of a conversation object.
	Conversation string `json:"conversation,omitempty"`
	// ResponseID is the last response's ID, for the next call's
	// previous_response_id when chaining.
	ResponseID string `json:"previous_response_id,omitempty"`
	// Seen is how many items at the head of the model input the server
	// holds. The last call's input had Sent items, the last of them at
	// position LastSeq; it must still be in place.
	Seen    int   `json:"seen"`
	Sent    int   `json:"sent,omitempty"`
	LastSeq int64 `json:"last_seq,omitempty"`
	// Started reports that a call was made.
	Started bool `json:"started,omitempty"`
	// From is the stored response a chain's first call continues when the
	// session remembers none ([ChainFrom]).
	From string `json:"from,omitempty"`
}

// ChainResponses returns the run option that chains the run's model calls
// on the server: each call after the first sends previous_response_id (set
// from the last response) and only the items added since. The run's first
// call continues the response its session remembers, when the persistence
// middleware has WithContinuation (see the package documentation), and
// otherwise sends the whole input. The responses must be stored (the API's
// default; see [WithStore]).
func ChainResponses() pipeline.RunOption {
	return pipeline.WithExtension(ServerStateKey, json.RawMessage(`{"chain":true}`))
}

// ChainFrom returns the run option that chains the run's model calls as
// [ChainResponses] does, and whose first call continues the stored
// response responseID when the session remembers none: that response is
// taken to hold the history the run started from, so the first call sends
// previous_response_id and only the run's own items. A response the
// session remembers (the persistence middleware's WithContinuation) is
// the more recent, and wins. If the server no longer has responseID, the
// call is sent again once with the whole input, as for a remembered one.
//
// ChainFrom, ChainResponses and [InConversation] set one run-state
// extension: of those given to one run, the last wins. The option is the
// run's, not a model's, so one [Model] serves conversations continuing
// different responses; a call outside a run (no [pipeline.ModelCall].Turn)
// and a [ChatModel], which keeps no server state, send the whole input.
// An empty responseID is [ChainResponses].
func ChainFrom(responseID string) pipeline.RunOption {
	b, _ := json.Marshal(serverState{Chain: true, From: responseID})
	return pipeline.WithExtension(ServerStateKey, b)
}

// InConversation returns the run option that keeps the run in the
// conversation id (a Conversations API object): each call names it and
// sends only the items the conversation does not hold. The history a
// session loads at the start of the run is taken to be in the
// conversation already (earlier runs of the session added it), so only the
// run's own input is sent on its first call.
func InConversation(id string) pipeline.RunOption {
	b, _ := json.Marshal(serverState{Conversation: id})
	return pipeline.WithExtension(ServerStateKey, b)
}

// serverStateOf returns the run's server state, or nil when the run does
// not keep its conversation on the server.
//
// A chain's first call continues from a stored response when there is
// one: the response the session remembers ([pipeline.Continuation], set by
// the persistence middleware's WithContinuation), else one named by hand
// ([ChainFrom]). Either holds the history the run started from, so only
// the run's own items are sent.
func serverStateOf(c *pipeline.ModelCall) (*serverState, error) {
	if c.Turn == nil || c.Turn.Run == nil {
		return nil, nil
	}
	run := c.Turn.Run
	var s serverState
	raw, ok := run.Extension(ServerStateKey)
	if ok {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("openai: run %s: extension %s: %w", run.ID(), ServerStateKey, err)
		}
	}
	if !s.Chain && s.Conversation == "" {
		return nil, nil
	}
	if s.Chain && !s.Started {
		cont, ok, err := pipeline.ContinuationOf(run)
		if err != nil {
			return nil, err
		}
		switch {
		case ok && cont.Seen <= c.Input.Len():
			s.continueFrom(c, cont.ResponseID, cont.Seen)
		case s.From != "":
			s.continueFrom(c, s.From, c.Input.Len()-ownItems(c))
		}
	}
	return &s, nil
}

// ownItems returns how many items at the end of c's input are the run's
// own: those after the context it started from.
func ownItems(c *pipeline.ModelCall) int {
	return min(c.Turn.Run.Len(), c.Input.Len())
}

// continueFrom makes the first call continue the stored response id,
// which holds the first seen items of the call's input.
func (s *serverState) continueFrom(c *pipeline.ModelCall, id string, seen int) {
	s.Started, s.ResponseID, s.Seen, s.Sent, s.LastSeq, s.From = true, id, seen, seen, 0, ""
	if seen > 0 {
		s.LastSeq = c.Input.At(seen - 1).Seq()
	}
}

// previous returns the response the request continues, if any.
func previous(p *responses.ResponseNewParams) string {
	if p.PreviousResponseID.Valid() {
		return p.PreviousResponseID.Value
	}
	return ""
}

// restart makes the request send the whole input and continue nothing:
// the server no longer holds what it continued.
func (s *serverState) restart(p *responses.ResponseNewParams, c *pipeline.ModelCall) {
	s.Seen, s.Sent, s.LastSeq, s.ResponseID = 0, 0, 0, ""
	p.PreviousResponseID = param.Opt[string]{}
	s.apply(p, c)
}

// isContinuationLost reports whether err is the API's answer to a
// previous_response_id it does not hold: code previous_response_not_found
// (HTTP 400), or a not-found or invalid-request error about that
// parameter.
func isContinuationLost(err error) bool {
	apiErr, ok := errors.AsType[*sdk.Error](err)
	if !ok {
		return false
	}
	if apiErr.Code == "previous_response_not_found" {
		return true
	}
	return apiErr.Param == "previous_response_id" && (apiErr.StatusCode == 400 || apiErr.StatusCode == 404)
}

// apply makes the request send only what the server has not seen.
func (s *serverState) apply(p *responses.ResponseNewParams, c *pipeline.ModelCall) {
	p.Input = param.Override[responses.ResponseNewParamsInputUnion](json.RawMessage(appendInput(nil, s.unseen(c))))
	s.link(p)
}

// unseen returns the part of c's input the server has not seen: all of
// it when the context it saw was replaced, which also drops the response
// the chain continued.
func (s *serverState) unseen(c *pipeline.ModelCall) state.Items {
	in := c.Input
	seen := s.Seen
	switch {
	case !s.Started && s.Conversation != "":
		seen = len(c.Turn.Run.History()) // earlier runs put the session's history there
	case !s.Started:
	case seen > in.Len() || s.Sent > in.Len() || (s.Sent > 0 && in.At(s.Sent-1).Seq() != s.LastSeq):
		seen, s.ResponseID = 0, "" // the context was replaced: start again
	}
	return in.From(seen)
}

// link sets on p what the request continues: exactly the response the
// chain continues, or the conversation.
func (s *serverState) link(p *responses.ResponseNewParams) {
	if s.Chain {
		p.PreviousResponseID = param.Opt[string]{}
		if s.ResponseID != "" {
			p.PreviousResponseID = param.NewOpt(s.ResponseID)
		}
	}
	if s.Conversation != "" {
		p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: param.NewOpt(s.Conversation)}
		p.PreviousResponseID = param.Opt[string]{}
	}
}

// advance records that the server now holds the call's input and the
// response's items, which the run records next, in this order.
func (s *serverState) advance(c *pipeline.ModelCall, out *pipeline.ModelResponse) {
	in := c.Input
	s.Started, s.ResponseID, s.From = true, out.ID, ""
	s.Seen, s.Sent, s.LastSeq = in.Len()+len(out.Items), in.Len(), 0
	if in.Len() > 0 {
		s.LastSeq = in.At(in.Len() - 1).Seq()
	}
	b, err := json.Marshal(s)
	if err != nil {
		return // a struct of strings and integers always marshals
	}
	c.Turn.Run.SetExtension(ServerStateKey, b)
}
