package anthropic

import "testing"

// readMessageCases are bodies the hand-written reader reads (ok) or
// leaves to encoding/json; FuzzReadMessage seeds with them too.
var readMessageCases = []struct {
	name string
	body string
	ok   bool
}{
	{"text and call", `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hi \"you\"\n\u00e9\ud83d\ude00 \/"},{"type":"tool_use","id":"toolu_1","name":"f","input":{ "a" : [1, 2], "b":"x y" }}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":4,"output_tokens_details":{"thinking_tokens":1},"server_tool_use":{"web_search_requests":0}}}`, true},
	{"thinking", ` { "id" : "m", "content" : [ {"type":"thinking","thinking":"hm","signature":"sig=="}, {"type":"redacted_thinking","data":"abc"}, {"type":"text","text":"ok","citations":[{"a":"]}"}]} ] } `, true},
	{"five blocks", `{"id":"m","content":[{"type":"text","text":"1"},{"type":"text","text":"2"},{"type":"text","text":"3"},{"type":"text","text":"4"},{"type":"text","text":"5"},{"type":"tool_use","id":"t","name":"n","input":null}],"stop_reason":"refusal"}`, true},
	{"no content", `{"id":"m","model":"x"}`, true},
	{"other case", `{"ID":"m","content":[]}`, false},
	{"folded name", `{"id":"m","content":[{"type":"text","TEXT":"a"}]}`, false},
	{"duplicate", `{"id":"m","id":"n"}`, false},
	{"null string", `{"id":null,"model":"x","content":[{"type":"text","text":null}],"usage":{"input_tokens":null}}`, true},
	{"null type", `{"content":[{"type":null}]}`, false},
	{"null content", `{"id":"m","content":null}`, false},
	{"opaque block", `{"id":"m","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]}`, false},
	{"no type", `{"id":"m","content":[{"text":"a"}]}`, false},
	{"fraction", `{"id":"m","usage":{"input_tokens":1.5}}`, false},
	{"lone surrogate", `{"id":"m","content":[{"type":"text","text":"\ud83d"}]}`, false},
	{"bad UTF-8", "{\"id\":\"m\xff\"}", false},
	{"not JSON", `{"id":"m"`, false},
	{"not an object", `["id"]`, false},
	{"escaped name", `{"i\u0064":"m"}`, false},
	{"non-ASCII name", `{"ıd":"m"}`, false},
}

// TestReadMessage: the hand-written reader reads the API's shapes,
// escapes and all, as encoding/json does, and gives up on the others.
func TestReadMessage(t *testing.T) {
	for _, tt := range readMessageCases {
		t.Run(tt.name, func(t *testing.T) {
			var buf [4]block
			msg, blocks, ok := readMessage([]byte(tt.body), buf[:0])
			if ok != tt.ok {
				t.Fatalf("readMessage ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			got, err := responseItems(msg.ID, blocks, msg.StopReason, "")
			want, werr := parseMessageJSON([]byte(tt.body), "")
			if err != nil || werr != nil {
				t.Fatalf("items: %v; encoding/json: %v", err, werr)
			}
			if msg.ID != want.ID || msg.Model != want.Model || msg.Usage.usage() != want.Usage || len(got) != len(want.Items) {
				t.Fatalf("read %+v %v, want %+v", msg, got, want)
			}
			for i := range got {
				if !got[i].Equal(want.Items[i]) {
					t.Errorf("item %d: %v, want %v", i, got[i], want.Items[i])
				}
			}
		})
	}
}
