package gemini_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/model/modeltest"
	"github.com/turnkit/turnkit/pipeline"
)

// The adapter passes the conformance suite through the real genai client,
// against answers written in the Gemini API's documented shapes:
// generateContent's GenerateContentResponse, streamGenerateContent's
// server-sent chunks of it, and the API's error body.
func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		NoCacheWrites: true, // the API reports cache reads only
		New: func(t *testing.T, c *modeltest.Case, srv *modeltest.Server) pipeline.Model {
			if c.Name == "StructuredOutputRefused" {
				// The Gemini API has no refusal text to record: a refused
				// answer is a SAFETY finish, whose finish message the
				// client drops on this backend. The adapter reports it as
				// a *FinishError holding a *pipeline.RefusalError whose
				// refusal is the reason (TestBlockedIsRefusal).
				t.Skip("the Gemini API refuses with a finish reason, not a refusal text")
			}
			client, err := genai.NewClient(t.Context(), &genai.ClientConfig{
				APIKey: "test-key", Backend: genai.BackendGeminiAPI,
				HTTPClient: srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
			})
			if err != nil {
				t.Fatal(err)
			}
			return gemini.New(client, gemini.WithModel("gemini-2.5-flash"))
		},
		Reply: geminiReply,
	})
}

// statusNames are the API's status names for the HTTP statuses the
// suite's errors use.
var statusNames = map[int]string{
	http.StatusBadRequest:          "INVALID_ARGUMENT",
	http.StatusTooManyRequests:     "RESOURCE_EXHAUSTED",
	http.StatusInternalServerError: "INTERNAL",
}

// geminiReply writes the Gemini API's answer to a request of the suite.
func geminiReply(t *testing.T, r *modeltest.Request) modeltest.Reply {
	turn := r.Case.Turns[r.Turn]
	wantPath := "/v1beta/models/gemini-2.5-flash:generateContent"
	if r.Stream {
		wantPath = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	}
	if r.Path != wantPath {
		t.Errorf("request path %s, want %s", r.Path, wantPath)
	}
	if e := turn.Err; e != nil {
		body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": e.Status, "message": e.Message, "status": statusNames[e.Status]}})
		return modeltest.Reply{Status: e.Status, Body: body, Header: http.Header{
			"Content-Type": {"application/json; charset=UTF-8"}, "X-Request-Id": {e.RequestID},
		}}
	}
	respID := "resp-" + strings.ToLower(r.Case.Name) + "-" + strconv.Itoa(r.Turn)
	var calls []map[string]any
	for i, c := range turn.Calls {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
			t.Errorf("case %s: arguments %s: %v", r.Case.Name, c.Arguments, err)
		}
		part := map[string]any{"functionCall": map[string]any{"id": respID + "-call-" + strconv.Itoa(i), "name": c.Name, "args": args}}
		if i == 0 {
			part["thoughtSignature"] = "c2lnbmF0dXJl" // on the first call of a step, as the API sends it
		}
		calls = append(calls, part)
	}
	u := turn.Usage
	usage := map[string]any{
		"promptTokenCount": u.InputTokens, "candidatesTokenCount": u.OutputTokens,
		"totalTokenCount": u.InputTokens + u.OutputTokens,
	}
	if u.CachedTokens > 0 {
		usage["cachedContentTokenCount"] = u.CachedTokens
	}
	chunk := func(parts []map[string]any, last bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		out := map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-2.5-flash", "responseId": respID}
		if last {
			cand["finishReason"] = "STOP"
			out["usageMetadata"] = usage
		}
		return out
	}
	if !r.Stream {
		var parts []map[string]any
		if turn.Text != "" {
			parts = append(parts, map[string]any{"text": turn.Text})
		}
		body, _ := json.Marshal(chunk(append(parts, calls...), true))
		return modeltest.Reply{Body: body, Header: http.Header{"Content-Type": {"application/json; charset=UTF-8"}}}
	}
	// The stream: the text in pieces of a few words, then the calls
	// and the finish reason.
	var chunks []map[string]any
	for _, piece := range pieces(turn.Text) {
		chunks = append(chunks, chunk([]map[string]any{{"text": piece}}, false))
	}
	if turn.Cut {
		chunks = chunks[:1]
	} else {
		chunks = append(chunks, chunk(calls, true))
	}
	var body []byte
	for _, c := range chunks {
		b, _ := json.Marshal(c)
		body = append(append(append(body, "data: "...), b...), "\r\n\r\n"...)
	}
	return modeltest.Reply{Body: body, Hold: turn.Cut, Header: http.Header{"Content-Type": {"text/event-stream"}}}
}

// pieces splits text into chunks of about three words.
func pieces(text string) []string {
	var out []string
	words := strings.SplitAfter(text, " ")
	for len(words) > 0 {
		n := min(3, len(words))
		out = append(out, strings.Join(words[:n], ""))
		words = words[n:]
	}
	return out
}
