package openai

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/pipeline"
)

// Server-side conversations. By default every model call sends the run's
// whole history. With [ChainResponses] or [InConversation] the server keeps
// the conversation, and each call sends only the items the server has not
// seen: the tool outputs and input added since the last response, O(new
// items) instead of O(history).
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
}

// ChainResponses returns the run option that chains the run's model calls
// on the server: each call after the first sends previous_response_id (set
// from the last response) and only the items added since. The responses
// must be stored (the API's default; see ModelSettings.Store).
func ChainResponses() pipeline.RunOption {
	return pipeline.WithExtension(ServerStateKey, json.RawMessage(`{"chain":true}`))
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
func serverStateOf(c *pipeline.ModelCall) (*serverState, error) {
	if c.Turn == nil || c.Turn.Run == nil {
		return nil, nil
	}
	raw, ok := c.Turn.Run.Extension(ServerStateKey)
	if !ok {
		return nil, nil
	}
	var s serverState
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("openai: run %s: extension %s: %w", c.Turn.Run.ID(), ServerStateKey, err)
	}
	if !s.Chain && s.Conversation == "" {
		return nil, nil
	}
	return &s, nil
}

// apply makes the request send only what the server has not seen.
func (s *serverState) apply(p *responses.ResponseNewParams, c *pipeline.ModelCall) {
	in := c.Input
	seen := s.Seen
	switch {
	case !s.Started && s.Conversation != "":
		seen = len(c.Turn.Run.History()) // earlier runs put the session's history there
	case !s.Started:
	case seen > in.Len() || s.Sent > in.Len() || (s.Sent > 0 && in.At(s.Sent-1).Seq() != s.LastSeq):
		seen, s.ResponseID = 0, "" // the context was replaced: start again
	}
	p.Input = param.Override[responses.ResponseNewParamsInputUnion](json.RawMessage(appendInput(nil, in.From(seen))))
	if s.Chain && s.ResponseID != "" {
		p.PreviousResponseID = param.NewOpt(s.ResponseID)
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
	s.Started, s.ResponseID = true, out.ID
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
