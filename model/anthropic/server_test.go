package anthropic_test

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

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// sse writes one server-sent event, with its event line, as the Messages
// API does.
func sse(buf *bytes.Buffer, event string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(buf, "event: %s\ndata: %s\n\n", event, b)
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

// messageEvents turns a Messages API response into the event stream the
// API sends for it, as documented: message_start (the message with empty
// content and the input usage), per block content_block_start, its deltas
// (text_delta, input_json_delta, thinking_delta then signature_delta) and
// content_block_stop, a ping, message_delta (stop reason, output usage)
// and message_stop.
func messageEvents(t testing.TB, body []byte) []byte {
	t.Helper()
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("messageEvents: %v", err)
	}
	var content []map[string]json.RawMessage
	if err := json.Unmarshal(msg["content"], &content); err != nil {
		t.Fatalf("messageEvents content: %v", err)
	}
	var usage map[string]any
	_ = json.Unmarshal(msg["usage"], &usage)
	var buf bytes.Buffer
	start := map[string]json.RawMessage{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = json.RawMessage(`[]`)
	start["stop_reason"] = json.RawMessage(`null`)
	startUsage := map[string]any{}
	for k, v := range usage {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = 1
	u, _ := json.Marshal(startUsage)
	start["usage"] = u
	sse(&buf, "message_start", map[string]any{"type": "message_start", "message": start})
	str := func(raw json.RawMessage) string {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	for i, blk := range content {
		typ := str(blk["type"])
		open := map[string]any{}
		for k, v := range blk {
			open[k] = v
		}
		var deltas []map[string]any
		switch typ {
		case "text":
			open["text"] = ""
			for _, d := range words(str(blk["text"])) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": d})
			}
		case "tool_use", "server_tool_use":
			open["input"] = map[string]any{}
			var in bytes.Buffer
			_ = json.Compact(&in, blk["input"])
			s := in.String()
			for len(s) > 0 {
				n := min(7, len(s))
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": s[:n]})
				s = s[n:]
			}
		case "thinking":
			open["thinking"], open["signature"] = "", ""
			for _, d := range words(str(blk["thinking"])) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": d})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": str(blk["signature"])})
		}
		sse(&buf, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": open})
		if i == 0 {
			sse(&buf, "ping", map[string]any{"type": "ping"})
		}
		for _, d := range deltas {
			sse(&buf, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		sse(&buf, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(&buf, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": json.RawMessage(msg["stop_reason"]), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	sse(&buf, "message_stop", map[string]any{"type": "message_stop"})
	return buf.Bytes()
}

// A fakeServer answers Messages API requests with testdata files in
// order, as a stream when the request asks for one, and records the
// request bodies.
type fakeServer struct {
	t     testing.TB
	srv   *httptest.Server
	mu    sync.Mutex
	files []string
	sent  [][]byte
}

func newFakeServer(t testing.TB, files ...string) *fakeServer {
	t.Helper()
	s := &fakeServer{t: t, files: files}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *fakeServer) client() sdk.Client { return clientAt(s.srv.URL, s.srv.Client()) }

func (s *fakeServer) bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.sent...)
}

func (s *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.sent = append(s.sent, body)
	if len(s.files) == 0 {
		s.mu.Unlock()
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"fake: no reply left"}}`, http.StatusTeapot)
		return
	}
	file := s.files[0]
	s.files = s.files[1:]
	s.mu.Unlock()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		s.t.Errorf("read testdata: %v", err)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	w.Header().Set("Request-Id", "req_fake")
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		data = messageEvents(s.t, data)
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	_, _ = w.Write(data)
}
