package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// responseBody is the part of a Responses API response object the adapter
// reads. Output items stay raw: they become the items' canonical JSON.
type responseBody struct {
	ID     string            `json:"id"`
	Model  string            `json:"model"`
	Status string            `json:"status"`
	Error  *errorBody        `json:"error"`
	Output []json.RawMessage `json:"output"`
	Usage  *responseUsage    `json:"usage"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type responseUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *responseUsage) usage() state.Usage {
	out := state.Usage{Requests: 1}
	if u != nil {
		out.InputTokens = u.InputTokens
		out.OutputTokens = u.OutputTokens
		out.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
		out.CachedTokens = u.InputTokensDetails.CachedTokens
	}
	return out
}

// parseResponse decodes a Responses API response object: with
// responseBody.decode, or else with encoding/json, which then says what
// is wrong with it.
func parseResponse(body []byte) (*pipeline.ModelResponse, error) {
	var r responseBody
	if !r.decode(body) {
		r = responseBody{} // not what decode left
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, &DecodeError{Where: "responses body", Err: err}
		}
	}
	return r.modelResponse()
}

// modelResponse converts the response: a failed response is an error, an
// incomplete one returns what the model produced.
func (r *responseBody) modelResponse() (*pipeline.ModelResponse, error) {
	if r.Status == "failed" || (r.Error != nil && r.Error.Code != "") {
		fe := &FailedError{ResponseID: r.ID}
		if r.Error != nil {
			fe.Code, fe.Message = r.Error.Code, r.Error.Message
		}
		return nil, fe
	}
	items, err := outputItems(r.Output)
	if err != nil {
		return nil, err
	}
	return &pipeline.ModelResponse{ID: r.ID, Model: r.Model, Items: items, Usage: r.Usage.usage()}, nil
}

// outputItems converts output items, in order, keeping each one's JSON.
func outputItems(raws []json.RawMessage) ([]state.Item, error) {
	items := make([]state.Item, len(raws))
	for i, raw := range raws {
		it, err := outputItem(raw)
		if err != nil {
			return nil, &DecodeError{Where: "output[" + strconv.Itoa(i) + "]", Err: err}
		}
		items[i] = it
	}
	return items, nil
}

// outputItem converts one output item: an assistant message (refusals
// included), a function call, a reasoning item, a hosted call (see
// [hostedTypes]) or, for any other type, an opaque item. The item keeps
// its JSON as the API sent it, ids and encrypted reasoning included.
func outputItem(raw []byte) (state.Item, error) {
	typ, role, compact, ok := itemHead(raw)
	if !ok {
		var head struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return state.Item{}, err
		}
		typ, role = jstr{raw: []byte(head.Type)}, jstr{raw: []byte(head.Role)}
		typ.plain, role.plain = true, true
	}
	var kind state.Kind
	switch {
	case typ.is("message"):
		if !role.is("assistant") {
			return state.Item{}, fmt.Errorf("%w: message with role %q", ErrUnsupportedItem, role.String())
		}
		kind = state.KindAssistantMessage
	case typ.is("function_call"):
		kind = state.KindToolCall
	case typ.is("reasoning"):
		kind = state.KindReasoning
	case typ.is("mcp_approval_request"):
		kind = state.KindMCPApprovalRequest
	case typ.is("custom_tool_call"):
		kind = state.KindCustomCall
	default:
		kind = typedKind(typ.String())
	}
	if ok && compact {
		return state.ParseItem(kind, raw) // which copies it
	}
	// Compact, so that the item's JSON is the same however the server
	// formatted it (a plain body and a stream's event give equal items).
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return state.Item{}, err
	}
	return state.ParseItem(kind, buf.Bytes())
}

// itemHead reads an output item's type and role as encoding/json decodes
// them, and whether the item is compact JSON (no whitespace outside its
// strings), with a scanner (see chunkView.decode); false if it cannot.
func itemHead(raw []byte) (typ, role jstr, compact, ok bool) {
	s := newScanner(raw)
	var seen uint8
	ok = s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return once(&seen, 1) && s.str(&typ)
		case "role":
			return once(&seen, 2) && s.str(&role)
		}
		return s.unknown(key, itemHeadKeys)
	})
	return typ, role, !s.WS, ok && s.I == len(s.B)
}

// itemHeadKeys are the members itemHead reads.
var itemHeadKeys = []string{"type", "role"}
