package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
)

// readDelta reads a delta event as the stream reader's fast read does:
// its shape (fastDelta), then its string (writeString).
func readDelta(data string) (index int, isJSON bool, text string, ok bool) {
	index, isJSON, str, ok := fastDelta([]byte(data))
	if !ok {
		return 0, false, "", false
	}
	var sb strings.Builder
	if !writeString(&sb, str) {
		return 0, false, "", false
	}
	if !validString(str) {
		panic("validString refuses what writeString read")
	}
	return index, isJSON, sb.String(), true
}

// TestTextDelta: the fast read of a text delta takes exactly the API's
// own shape, unescapes the text, and leaves every other shape to the
// general read.
func TestTextDelta(t *testing.T) {
	tests := []struct {
		give  string
		index int
		text  string
		ok    bool
	}{
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`, 0, "Hello", true},
		{`{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"a \"quoted\" \u00e9\n"}}` + "\n", 12, "a \"quoted\" é\n", true},
		{`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":""}}`, 1, "", true},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","x":"b"}}`, 0, "", false},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"","x":"b"}}`, 0, "", false},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}`, 0, "", false},
		{`{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}`, 0, "", false},
		{`{"delta":{"text":"Hi","type":"text_delta"},"index":0,"type":"content_block_delta"}`, 0, "", false},
		{`{"type":"content_block_delta","index":x,"delta":{"type":"text_delta","text":"Hi"}}`, 0, "", false},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}`, 0, "", false},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad \q"}}`, 0, "", false},
	}
	for _, tt := range tests {
		index, isJSON, text, ok := readDelta(tt.give)
		ok = ok && !isJSON // a text delta's fast read
		if ok != tt.ok || (ok && (index != tt.index || text != tt.text)) {
			t.Errorf("textDelta(%s) = %d, %q, %v; want %d, %q, %v", tt.give, index, text, ok, tt.index, tt.text, tt.ok)
		}
	}
}

// TestFastDelta: an input JSON delta in the API's own shape is read
// without a JSON parser too, its partial JSON unescaped; a text delta is
// still a text delta.
func TestFastDelta(t *testing.T) {
	tests := []struct {
		give  string
		index int
		json  bool
		text  string
		ok    bool
	}{
		{`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`, 1, true, `{"city": `, true},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, 0, false, "Hi", true},
		{`{"type":"content_block_delta","index":1,"delta":{"partial_json":"{","type":"input_json_delta"}}`, 0, false, "", false},
		{`{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}`, 0, false, "", false},
	}
	for _, tt := range tests {
		index, isJSON, text, ok := readDelta(tt.give)
		if ok != tt.ok || (ok && (index != tt.index || isJSON != tt.json || text != tt.text)) {
			t.Errorf("fastDelta(%s) = %d, %v, %q, %v; want %d, %v, %q, %v", tt.give, index, isJSON, text, ok, tt.index, tt.json, tt.text, tt.ok)
		}
	}
}

// TestEventTypeAndStopIndex: the reads without a copy take the API's own
// shapes and agree with gjson's read on every other.
func TestEventTypeAndStopIndex(t *testing.T) {
	types := map[string]string{
		`{"type":"message_stop"}`:                              "message_stop",
		`{"type":"ping"}`:                                      "ping",
		`{"type":"content_block_stop","index":3}`:              "content_block_stop",
		`{"index":3,"type":"content_block_stop"}`:              "content_block_stop",
		`{ "type": "message_delta", "delta": {}}`:              "message_delta",
		`{"type":"ping_2"}`:                                    "ping_2",
		`{"type":"message_stop\u0020"}`:                        "message_stop ",
		`{"type":"error","error":{"type":"overloaded_error"}}`: "error",
	}
	for give, want := range types {
		if got := eventType([]byte(give)); got != want {
			t.Errorf("eventType(%s) = %q, want %q", give, got, want)
		}
	}
	stops := []struct {
		give  string
		index int
		ok    bool
	}{
		{`{"type":"content_block_stop","index":0}`, 0, true},
		{`{"type":"content_block_stop","index":12}` + "\n", 12, true},
		{`{"type":"content_block_stop","index":1,"x":2}`, 0, false},
		{`{"type":"content_block_stop","index":-1}`, 0, false},
		{`{"index":1,"type":"content_block_stop"}`, 0, false},
		{`{"type":"content_block_stop","index":1`, 0, false},
	}
	for _, tt := range stops {
		if index, ok := stopIndex([]byte(tt.give)); ok != tt.ok || index != tt.index {
			t.Errorf("stopIndex(%s) = %d, %v; want %d, %v", tt.give, index, ok, tt.index, tt.ok)
		}
	}
}

// TestStreamTextArena: the text deltas handed to a consumer and the
// blocks' texts, all spans of one arena, stay as they were read while the
// arena grows past its first room and while two blocks' deltas
// interleave (which the API does not do, but a stream may).
func TestStreamTextArena(t *testing.T) {
	var b bytes.Buffer
	ev := func(data string) { fmt.Fprintf(&b, "event: x\ndata: %s\n\n", data) }
	ev(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`)
	ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`)
	var want []string
	texts := []string{"", ""}
	for i := range 40 {
		text := fmt.Sprintf("delta %d of block %d %s", i, i%3%2, strings.Repeat("é\"\n", i%5))
		d, _ := json.Marshal(text)
		ev(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i%3%2, d))
		want = append(want, text)
		texts[i%3%2] += text
	}
	// One delta read the general way (spaces), in the same arena.
	ev(`{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "last"}}`)
	want = append(want, "last")
	texts[0] += "last"
	ev(`{"type":"content_block_stop","index":0}`)
	ev(`{"type":"content_block_stop","index":1}`)
	ev(`{"type":"message_stop"}`)

	log := &pipelinetest.EventLog{}
	c := pipelinetest.NewModelCall(t, pipelinetest.NewTurn(t, pipelinetest.WithEvents(log)))
	dec := newEvents(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(&b)})
	defer dec.Close()
	resp, err := readStream(dec, c, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log.Events() {
		if d, ok := e.(pipeline.TextDelta); ok {
			got = append(got, d.Delta)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("deltas emitted:\n%q\nwant\n%q", got, want)
	}
	if len(resp.Items) != 2 || resp.Items[0].Text() != texts[0] || resp.Items[1].Text() != texts[1] {
		t.Errorf("items %v, want the texts %q", resp.Items, texts)
	}
}
