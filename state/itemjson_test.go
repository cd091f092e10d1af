package state

import (
	"encoding/json"
	"testing"
)

// The hand-written encoders must produce what encoding/json makes of the
// same fields, so that an item's canonical JSON is the standard one.
func TestItemJSONMatchesEncodingJSON(t *testing.T) {
	type text struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	type assistant struct {
		Type    string `json:"type"`
		ID      string `json:"id,omitempty"`
		Role    string `json:"role"`
		Status  string `json:"status"`
		Content []text `json:"content"`
	}
	type call struct {
		Type      string `json:"type"`
		ID        string `json:"id,omitempty"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
	type output struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	type message struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type reasoning struct {
		Type    string        `json:"type"`
		ID      string        `json:"id,omitempty"`
		Summary []summaryText `json:"summary"`
	}
	texts := []string{"", "plain", `quote " and \ slash`, "<b>&amp;</b>", "tab\tnl\ncr\r\x00\x1f\x7f bs\b ff\f", "héllo wörld 🌍 עברית", "bad \xff utf8", "line\u2028sep\u2029", `{"a":[1,2]}`}
	mustJSON := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, s := range texts {
		for _, id := range []string{"", "id_1"} {
			var summary []summaryText
			if s != "" {
				summary = []summaryText{{Type: "summary_text", Text: s}}
			}
			cases := []struct {
				name string
				got  Item
				want string
			}{
				{"user", UserMessage(s), mustJSON(message{"message", "user", s})},
				{"system", SystemMessage(s), mustJSON(message{"message", "developer", s})},
				{"assistant", AssistantMessage(id, s), mustJSON(assistant{"message", id, "assistant", "completed", []text{{"output_text", s, []any{}}}})},
				{"reasoning", Reasoning(id, s), mustJSON(reasoning{"reasoning", id, summary})},
				{"call", ToolCall(id, "c"+s, "n"+s, s), mustJSON(call{"function_call", id, "c" + s, "n" + s, s, "completed"})},
				{"output", ToolOutput("c"+s, "n", s), mustJSON(output{"function_call_output", "c" + s, s})},
			}
			for _, c := range cases {
				if got := string(c.got.raw); got != c.want {
					t.Errorf("%s(%q, %q):\n got %s\nwant %s", c.name, id, s, got, c.want)
				}
				if _, err := ParseItem(c.got.Kind(), c.got.raw); err != nil {
					t.Errorf("%s(%q): ParseItem of its own JSON: %v", c.name, s, err)
				}
			}
		}
	}
}

var sinkRaw []byte

// TestItemJSONOneAllocation: each encoder sizes its buffer for the JSON
// around the strings it is given, so that an item of plain text costs
// one allocation, not a second one when the buffer grows.
func TestItemJSONOneAllocation(t *testing.T) {
	encoders := map[string]func(){
		"message":   func() { sinkRaw = messageRaw("user", "What is the weather?") },
		"assistant": func() { sinkRaw = assistantRaw("msg_01AbCd", "It is sunny.") },
		"reasoning": func() { sinkRaw = reasoningRaw("rs_1", "thinking") },
		"call":      func() { sinkRaw = callRaw("fc_1", "call_1", "get_weather", `{"city":"Paris"}`) },
		"output":    func() { sinkRaw = outputRaw("call_1", "sunny") },
	}
	for name, f := range encoders {
		if n := testing.AllocsPerRun(10, f); n != 1 {
			t.Errorf("%s: %v allocations, want 1", name, n)
		}
	}
}
