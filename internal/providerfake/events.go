package providerfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// wantsStream reports whether a Messages API request body asks for a
// stream.
func wantsStream(body []byte) bool {
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	return req.Stream
}

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

// MessageEvents turns a Messages API response into the event stream the
// API sends for it, as documented: message_start (the message with empty
// content and the input usage), per block content_block_start, its deltas
// (text_delta, input_json_delta, thinking_delta then signature_delta) and
// content_block_stop, a ping, message_delta (stop reason, output usage)
// and message_stop.
func MessageEvents(t testing.TB, body []byte) []byte {
	t.Helper()
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("MessageEvents: %v", err)
	}
	var content []map[string]json.RawMessage
	if err := json.Unmarshal(msg["content"], &content); err != nil {
		t.Fatalf("MessageEvents content: %v", err)
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
