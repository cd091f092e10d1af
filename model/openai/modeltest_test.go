package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/model/modeltest"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
)

// TestConformanceResponses runs the model conformance suite on the
// Responses adapter through the real openai-go client, against response
// objects in the documented shape (streamed as the API's event stream).
func TestConformanceResponses(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		NoCacheWrites: true, // the API reports cache reads only
		New: func(t *testing.T, c *modeltest.Case, srv *modeltest.Server) pipeline.Model {
			return openai.New(suiteClient(srv), openai.WithModel("gpt-5-mini"))
		},
		Reply: func(t *testing.T, r *modeltest.Request) modeltest.Reply {
			return openaiReply(t, r, responsesBody, responseEvents, `"delta":"`)
		},
	})
}

// TestConformanceChat runs the suite on the Chat Completions adapter.
// Chat Completions' tool messages take text only: an image in a tool's
// output is refused before the request.
func TestConformanceChat(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		NoCacheWrites: true, // the API reports cache reads only
		New: func(t *testing.T, c *modeltest.Case, srv *modeltest.Server) pipeline.Model {
			return openai.NewChat(suiteClient(srv), openai.WithModel("gpt-4o-mini"))
		},
		Reply: func(t *testing.T, r *modeltest.Request) modeltest.Reply {
			return openaiReply(t, r, chatBody, chatEvents, `"content":"`)
		},
		Unsupported: []modeltest.Feature{modeltest.FeatureToolOutputImage},
	})
}

func suiteClient(srv *modeltest.Server) sdk.Client {
	return sdk.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("sk-test"),
		option.WithHTTPClient(srv.Client()),
		option.WithMaxRetries(0),
	)
}

// openaiReply answers a suite request: the turn's body, as events when
// the run streams (cut after the first text delta for a cut turn), or
// the API's error body.
func openaiReply(t *testing.T, r *modeltest.Request, body func(id string, turn modeltest.Turn) []byte,
	events func(testing.TB, []byte) []byte, firstDelta string) modeltest.Reply {
	turn := r.Case.Turns[r.Turn]
	id := fmt.Sprintf("%s_%d", strings.ToLower(r.Case.Name), r.Turn)
	h := http.Header{"X-Request-Id": {"req_" + id}, "Content-Type": {"application/json"}}
	if e := turn.Err; e != nil {
		h.Set("X-Request-Id", e.RequestID)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": e.Message, "type": "api_error", "param": nil, "code": nil}})
		return modeltest.Reply{Status: e.Status, Header: h, Body: b}
	}
	b := body(id, turn)
	if !r.Stream {
		return modeltest.Reply{Header: h, Body: b}
	}
	h.Set("Content-Type", "text/event-stream")
	b = events(t, b)
	if !turn.Cut {
		return modeltest.Reply{Header: h, Body: b}
	}
	// Keep the events up to the first one that carries text.
	for n := 0; n < len(b); {
		end := bytes.Index(b[n:], []byte("\n\n"))
		if end < 0 {
			break
		}
		ev := b[n : n+end]
		n += end + 2
		if i := bytes.Index(ev, []byte(firstDelta)); i >= 0 && i+len(firstDelta) < len(ev) && ev[i+len(firstDelta)] != '"' {
			return modeltest.Reply{Header: h, Body: b[:n], Hold: true}
		}
	}
	t.Errorf("no text delta in the stream of %s", id) // Reply runs on the server's goroutine: no Fatal
	return modeltest.Reply{Status: http.StatusInternalServerError, Header: h, Body: []byte(`{"error":{"message":"no text delta"}}`)}
}

// responsesBody writes a Responses API response object for the turn.
func responsesBody(id string, turn modeltest.Turn) []byte {
	var output []any
	switch {
	case turn.Refusal != "":
		output = append(output, map[string]any{"id": "msg_" + id, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "refusal", "refusal": turn.Refusal}}})
	case turn.Text != "":
		output = append(output, map[string]any{"id": "msg_" + id, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}, "logprobs": []any{}}}})
	}
	for i, c := range turn.Calls {
		output = append(output, map[string]any{"id": fmt.Sprintf("fc_%s_%d", id, i), "type": "function_call", "status": "completed",
			"call_id": fmt.Sprintf("call_%s_%d", id, i), "name": c.Name, "arguments": c.Arguments})
	}
	u := turn.Usage
	b, _ := json.Marshal(map[string]any{
		"id": "resp_" + id, "object": "response", "created_at": 1764633600, "status": "completed",
		"model": "gpt-5-mini-2025-08-07", "output": output, "parallel_tool_calls": true,
		"usage": map[string]any{
			"input_tokens": u.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
			"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
			"total_tokens": u.InputTokens + u.OutputTokens,
		},
	})
	return b
}

// chatBody writes a chat completion for the turn.
func chatBody(id string, turn modeltest.Turn) []byte {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "stop"
	switch {
	case turn.Refusal != "":
		msg["refusal"] = turn.Refusal
	case turn.Text != "":
		msg["content"] = turn.Text
	}
	if len(turn.Calls) > 0 {
		var calls []any
		for i, c := range turn.Calls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%s_%d", id, i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"], finish = calls, "tool_calls"
	}
	u := turn.Usage
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-" + id, "object": "chat.completion", "created": 1764633600, "model": "gpt-4o-mini-2024-07-18",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage": map[string]any{
			"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens},
			"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		},
	})
	return b
}
