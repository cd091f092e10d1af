package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// A reply is what the fake server answers to one request.
type reply struct {
	status int
	header map[string]string
	// file is a testdata file served as the body. A .json body of a
	// Responses or chat completion object is turned into the API's event
	// stream when the request asked to stream; an .sse file is served as
	// it is.
	file string
	// body, when set, is served instead of file's contents; file still
	// names it ("responses_…" for a Responses object).
	body []byte
	// cut closes the connection abruptly after the body (no clean end).
	cut bool
	// hang writes the body, then waits until the client goes away.
	hang bool
}

// A server speaks the Responses API and Chat Completions over HTTP, from
// replies given in order. It records every request body.
type server struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []request
}

type request struct {
	path string
	body []byte
}

func newServer(t testing.TB, replies ...reply) *server {
	t.Helper()
	s := &server{t: t, replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// client returns the real openai-go client pointed at the server, with
// retries as given.
func (s *server) client(retries int) sdk.Client {
	return sdk.NewClient(
		option.WithBaseURL(s.srv.URL+"/v1/"),
		option.WithAPIKey("sk-test"),
		option.WithHTTPClient(s.srv.Client()),
		option.WithMaxRetries(retries),
	)
}

func (s *server) Requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.requests...)
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, request{path: r.URL.Path, body: body})
	if len(s.replies) == 0 {
		s.mu.Unlock()
		http.Error(w, `{"error":{"message":"fake server: no reply left","type":"test"}}`, http.StatusTeapot)
		return
	}
	rp := s.replies[0]
	s.replies = s.replies[1:]
	s.mu.Unlock()

	data := rp.body
	if data == nil {
		data = readFile(s.t, rp.file)
	}
	var stream struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &stream)
	contentType := "application/json"
	switch {
	case strings.HasSuffix(rp.file, ".sse"):
		contentType = "text/event-stream"
	case stream.Stream && (rp.status == 0 || rp.status == http.StatusOK) && strings.Contains(rp.file, "chat"):
		data, contentType = chatEvents(s.t, data), "text/event-stream"
	case stream.Stream && (rp.status == 0 || rp.status == http.StatusOK) && strings.HasPrefix(rp.file, "responses"):
		data, contentType = responseEvents(s.t, data), "text/event-stream"
	case strings.HasPrefix(rp.file, "malformed"):
		contentType = "application/json"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("x-request-id", fmt.Sprintf("req_%d", len(s.Requests())))
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	status := rp.status
	if status == 0 {
		status = http.StatusOK
	}
	if rp.cut {
		// Promise more than we send, then drop the connection.
		w.Header().Set("Content-Length", fmt.Sprint(len(data)+100))
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	switch {
	case rp.cut:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
	case rp.hang:
		<-r.Context().Done()
	}
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	return b
}

// sse writes one server-sent event.
func sse(buf *bytes.Buffer, event string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if event != "" {
		fmt.Fprintf(buf, "event: %s\n", event)
	}
	fmt.Fprintf(buf, "data: %s\n\n", b)
}

// words splits s into deltas the way a model streams them.
func words(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			i = len(s) - 1
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// responseEvents turns a Responses API response object into the event
// stream the API sends for it, as documented: response.created, per
// output item output_item.added, its content or argument deltas and
// output_item.done, then response.completed with the whole response.
func responseEvents(t testing.TB, body []byte) []byte {
	t.Helper()
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("responseEvents: %v", err)
	}
	var output []map[string]any
	if err := json.Unmarshal(resp["output"], &output); err != nil {
		t.Fatalf("responseEvents output: %v", err)
	}
	var buf bytes.Buffer
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		sse(&buf, typ, fields)
	}
	created := map[string]json.RawMessage{}
	for k, v := range resp {
		created[k] = v
	}
	created["status"] = json.RawMessage(`"in_progress"`)
	created["output"] = json.RawMessage(`[]`)
	created["usage"] = json.RawMessage(`null`)
	ev("response.created", map[string]any{"response": created})
	ev("response.in_progress", map[string]any{"response": created})
	for i, item := range output {
		id, _ := item["id"].(string)
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch item["type"] {
		case "message":
			added["content"] = []any{}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			parts, _ := item["content"].([]any)
			for j, p := range parts {
				part, _ := p.(map[string]any)
				field, kind := "text", "output_text"
				if part["type"] == "refusal" {
					field, kind = "refusal", "refusal"
				}
				text, _ := part[field].(string)
				ev("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": j, "part": map[string]any{"type": part["type"], field: ""}})
				for _, d := range words(text) {
					ev("response."+kind+".delta", map[string]any{"item_id": id, "output_index": i, "content_index": j, "delta": d})
				}
				ev("response."+kind+".done", map[string]any{"item_id": id, "output_index": i, "content_index": j, field: text})
				ev("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": j, "part": part})
			}
		case "function_call":
			added["arguments"] = ""
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			args, _ := item["arguments"].(string)
			for _, d := range words(args) {
				ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": d})
			}
			ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
		default:
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			typ, _ := item["type"].(string)
			hostedProgress(ev, typ, id, i, item)
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	ev("response.completed", map[string]any{"response": json.RawMessage(body)})
	return buf.Bytes()
}

// chatEvents turns a chat completion into the chunk stream the API sends
// for it: content deltas, tool call deltas, the finish reason, a usage
// chunk and [DONE].
func chatEvents(t testing.TB, body []byte) []byte {
	t.Helper()
	var resp struct {
		ID      string          `json:"id"`
		Model   string          `json:"model"`
		Usage   json.RawMessage `json:"usage"`
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				Refusal   *string `json:"refusal"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("chatEvents: %v", err)
	}
	var buf bytes.Buffer
	chunk := func(delta map[string]any, finish any) {
		sse(&buf, "", map[string]any{
			"id": resp.ID, "object": "chat.completion.chunk", "model": resp.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
	}
	msg := resp.Choices[0].Message
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if msg.Content != nil {
		for _, d := range words(*msg.Content) {
			chunk(map[string]any{"content": d}, nil)
		}
	}
	if msg.Refusal != nil {
		for _, d := range words(*msg.Refusal) {
			chunk(map[string]any{"refusal": d}, nil)
		}
	}
	for i, tc := range msg.ToolCalls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": tc.Type,
			"function": map[string]any{"name": tc.Function.Name, "arguments": ""}}}}, nil)
		for _, d := range words(tc.Function.Arguments) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": d}}}}, nil)
		}
	}
	chunk(map[string]any{}, resp.Choices[0].FinishReason)
	sse(&buf, "", map[string]any{"id": resp.ID, "object": "chat.completion.chunk", "model": resp.Model, "choices": []any{}, "usage": resp.Usage})
	buf.WriteString("data: [DONE]\n\n")
	return buf.Bytes()
}

// hostedProgress emits the progress events the API sends for a hosted
// call between its output_item.added and output_item.done events.
func hostedProgress(ev func(string, map[string]any), typ, id string, i int, item map[string]any) {
	at := func() map[string]any { return map[string]any{"item_id": id, "output_index": i} }
	with := func(k string, v any) map[string]any { m := at(); m[k] = v; return m }
	steps := map[string][]string{
		"web_search_call":       {"in_progress", "searching", "completed"},
		"file_search_call":      {"in_progress", "searching", "completed"},
		"code_interpreter_call": {"in_progress", "interpreting", "completed"},
		"image_generation_call": {"in_progress", "generating", "completed"},
		"mcp_call":              {"in_progress", "completed"},
		"mcp_list_tools":        {"in_progress", "completed"},
	}[typ]
	for _, step := range steps {
		if step == "completed" {
			switch typ {
			case "code_interpreter_call":
				code, _ := item["code"].(string)
				ev("response.code_interpreter_call_code.delta", with("delta", code))
				ev("response.code_interpreter_call_code.done", with("code", code))
			case "image_generation_call":
				ev("response.image_generation_call.partial_image", with("partial_image_b64", item["result"]))
			case "mcp_call":
				args, _ := item["arguments"].(string)
				ev("response.mcp_call_arguments.delta", with("delta", args))
				ev("response.mcp_call_arguments.done", with("arguments", args))
			}
		}
		ev("response."+typ+"."+step, at())
	}
	if typ == "custom_tool_call" {
		input, _ := item["input"].(string)
		ev("response.custom_tool_call_input.delta", with("delta", input))
		ev("response.custom_tool_call_input.done", with("input", input))
	}
}

// clientAt returns the real openai-go client pointed at a server's URL,
// without retries (for a server that may live in another process).
func clientAt(url string) sdk.Client {
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // no idle connection outlives a test
	return sdk.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithHTTPClient(hc), option.WithMaxRetries(0))
}
