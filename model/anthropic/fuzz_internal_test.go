package anthropic

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// FuzzParseMessage feeds Messages API bodies to the response decoder: a
// body it refuses is a *DecodeError (ErrMalformedResponse), never a panic;
// one it accepts gives items of valid JSON that a following request can
// carry again (what the adapter read, it sends back: thinking blocks,
// server-tool blocks, calls, text and a refusal).
func FuzzParseMessage(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	f.Add([]byte(`{"id":"msg_2","content":[{"type":"redacted_thinking","data":"x"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":[1,2]}}]}`))
	f.Add([]byte(`{"id":"msg_3","content":[{"type":"text","text":"no"}],"stop_reason":"refusal"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := parseMessage(body)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) && !errors.Is(err, ErrMalformedResponse) {
				t.Fatalf("refused with %T %v, want a *DecodeError", err, err)
			}
			return
		}
		for _, it := range resp.Items {
			if it.IsZero() {
				t.Fatal("a zero item in the response")
			}
			if !json.Valid(it.AppendRaw(nil)) {
				t.Fatalf("item %v: raw JSON not valid: %s", it, it.AppendRaw(nil))
			}
		}
		cfg := newConfig(nil)
		if _, err := cfg.appendMessages(nil, state.ItemsOf(append([]state.Item{state.UserMessage("q")}, resp.Items...))); err != nil {
			t.Fatalf("the items read cannot be sent back: %v", err)
		}
	})
}
