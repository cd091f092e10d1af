package anthropic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/model/modeltest"
	"github.com/turnkit/turnkit/pipeline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the model conformance suite on the adapter through
// the real anthropic-sdk-go client, against Messages API responses in the
// documented shape, streamed as the documented event stream.
func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		New: func(t *testing.T, c *modeltest.Case, srv *modeltest.Server) pipeline.Model {
			return anthropic.New(clientAt(srv.URL, srv.Client()), anthropic.WithModel("claude-sonnet-4-5"))
		},
		Reply: func(t *testing.T, r *modeltest.Request) modeltest.Reply {
			turn := r.Case.Turns[r.Turn]
			id := fmt.Sprintf("msg_%s_%d", strings.ToLower(r.Case.Name), r.Turn)
			if e := turn.Err; e != nil {
				return errorReply(e.Status, e.RequestID, e.Message)
			}
			body := messageOf(id, turn)
			if !r.Stream {
				return jsonReply(body)
			}
			events := messageEvents(t, body)
			if !turn.Cut {
				return modeltest.Reply{Header: sseHeader(), Body: events}
			}
			i := bytes.Index(events, []byte(`"type":"text_delta"`))
			if i < 0 {
				t.Errorf("no text delta in the stream of %s", id)
				return errorReply(http.StatusInternalServerError, "req_cut", "no text delta")
			}
			end := bytes.Index(events[i:], []byte("\n\n"))
			return modeltest.Reply{Header: sseHeader(), Body: events[:i+end+2], Hold: true}
		},
	})
}

// TestConformanceOutputTool runs the suite on the adapter with
// WithOutputTool: the structured cases' answers come as a tool_use of the
// forced output tool ("weather"), streamed as input JSON deltas, and their
// requests carry that tool first and force a tool call ("any": the
// suite's agent has tools of its own) instead of output_config.
func TestConformanceOutputTool(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		New: func(t *testing.T, c *modeltest.Case, srv *modeltest.Server) pipeline.Model {
			return anthropic.New(clientAt(srv.URL, srv.Client()), anthropic.WithModel("claude-3-5-haiku"), anthropic.WithOutputTool())
		},
		Reply: func(t *testing.T, r *modeltest.Request) modeltest.Reply {
			turn := r.Case.Turns[r.Turn]
			if r.Case.Structured {
				const forced = `"tool_choice":{"type":"any"}`
				if !bytes.Contains(r.Body, []byte(forced)) || bytes.Contains(r.Body, []byte("output_config")) ||
					!bytes.Contains(r.Body, []byte(`"tools":[{"name":"weather",`)) {
					t.Errorf("request %d of %s does not force the output tool: %s", r.Turn, r.Case.Name, r.Body)
				}
				if turn.Text != "" {
					turn.Calls, turn.Text = []modeltest.Call{{Name: "weather", Arguments: turn.Text}}, ""
				}
			}
			id := fmt.Sprintf("msg_%s_%d", strings.ToLower(r.Case.Name), r.Turn)
			if e := turn.Err; e != nil {
				return errorReply(e.Status, e.RequestID, e.Message)
			}
			body := messageOf(id, turn)
			if !r.Stream {
				return jsonReply(body)
			}
			events := messageEvents(t, body)
			if !turn.Cut {
				return modeltest.Reply{Header: sseHeader(), Body: events}
			}
			i := bytes.Index(events, []byte(`"type":"text_delta"`))
			end := bytes.Index(events[i:], []byte("\n\n"))
			return modeltest.Reply{Header: sseHeader(), Body: events[:i+end+2], Hold: true}
		},
	})
}

// clientAt returns the real client pointed at a fake server, without
// retries.
func clientAt(url string, hc *http.Client) sdk.Client {
	return sdk.NewClient(
		option.WithBaseURL(url),
		option.WithAPIKey("sk-ant-test"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
}

func sseHeader() http.Header {
	return http.Header{"Content-Type": {"text/event-stream"}, "Request-Id": {"req_stream"}}
}

func jsonReply(body []byte) modeltest.Reply {
	return modeltest.Reply{Header: http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_plain"}}, Body: body}
}

// errorReply is the API's error: its body shape, its request-id header.
func errorReply(status int, requestID, msg string) modeltest.Reply {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}[status]
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": requestID})
	return modeltest.Reply{Status: status, Header: http.Header{"Content-Type": {"application/json"}, "Request-Id": {requestID}}, Body: b}
}

// messageOf writes a Messages API response for a suite turn.
func messageOf(id string, turn modeltest.Turn) []byte {
	var content []any
	stop := "end_turn"
	switch {
	case turn.Refusal != "":
		content = append(content, map[string]any{"type": "text", "text": turn.Refusal})
		stop = "refusal"
	case turn.Text != "":
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	for i, c := range turn.Calls {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%s_%d", id, i), "name": c.Name, "input": json.RawMessage(c.Arguments)})
		stop = "tool_use"
	}
	u := turn.Usage
	b, err := json.Marshal(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": u.InputTokens - u.CachedTokens - u.CacheWriteTokens, "cache_read_input_tokens": u.CachedTokens,
			"cache_creation_input_tokens": u.CacheWriteTokens, "output_tokens": u.OutputTokens, "service_tier": "standard",
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}
