package anthropic

import "testing"

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
		index, text, ok := textDelta([]byte(tt.give))
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
		index, isJSON, text, ok := fastDelta([]byte(tt.give))
		if ok != tt.ok || (ok && (index != tt.index || isJSON != tt.json || text != tt.text)) {
			t.Errorf("fastDelta(%s) = %d, %v, %q, %v; want %d, %v, %q, %v", tt.give, index, isJSON, text, ok, tt.index, tt.json, tt.text, tt.ok)
		}
	}
}
