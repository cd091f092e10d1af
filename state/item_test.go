package state_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/state"
)

func TestKindNames(t *testing.T) {
	for k := state.KindUserMessage; k.Valid(); k++ {
		text, err := k.MarshalText()
		if err != nil {
			t.Fatalf("%d: MarshalText: %v", k, err)
		}
		var back state.Kind
		if err := back.UnmarshalText(text); err != nil || back != k || string(text) != k.String() {
			t.Errorf("%d: %q round-trips to %d (%v)", k, text, back, err)
		}
	}
	var zero state.Kind
	if zero.Valid() {
		t.Error("the zero Kind is valid")
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Error("MarshalText of the zero Kind succeeded")
	}
	if _, err := state.ParseKind("tool_cal"); err == nil {
		t.Error("ParseKind accepted an unknown name")
	}
	if !state.KindHandoffCall.IsCall() || state.KindToolOutput.IsCall() || !state.KindHandoffOutput.IsOutput() {
		t.Error("IsCall/IsOutput are wrong")
	}
}

func TestConstructors(t *testing.T) {
	type fields struct {
		Kind   string
		CallID string
		Name   string
		Text   string
		Raw    string
	}
	get := func(it state.Item) fields {
		return fields{it.Kind().String(), it.CallID(), it.Name(), it.Text(), string(it.Raw())}
	}
	tests := []struct {
		item state.Item
		want fields
	}{
		{state.UserMessage("hi"), fields{"user_message", "", "", "hi", `{"type":"message","role":"user","content":"hi"}`}},
		{state.SystemMessage("be brief"), fields{"system_message", "", "", "be brief", `{"type":"message","role":"developer","content":"be brief"}`}},
		{state.AssistantMessage("msg_1", "hello"), fields{"assistant_message", "", "", "hello",
			`{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hello","annotations":[]}]}`}},
		{state.Reasoning("rs_1", "think"), fields{"reasoning", "", "", "think", `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}]}`}},
		{state.Reasoning("rs_2", ""), fields{"reasoning", "", "", "", `{"type":"reasoning","id":"rs_2","summary":null}`}},
		{state.ToolCall("fc_1", "call_1", "add", `{"a":1}`), fields{"tool_call", "call_1", "add", `{"a":1}`,
			`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"add","arguments":"{\"a\":1}","status":"completed"}`}},
		{state.ToolCall("fc_2", "call_2", "add", `{"a":`), fields{"tool_call", "call_2", "add", `{"a":`,
			`{"type":"function_call","id":"fc_2","call_id":"call_2","name":"add","arguments":"{\"a\":","status":"completed"}`}},
		{state.ToolOutput("call_1", "add", "3"), fields{"tool_output", "call_1", "add", "3", `{"type":"function_call_output","call_id":"call_1","output":"3"}`}},
		{state.HandoffCall("fc_3", "call_3", "transfer_to_b", `{}`), fields{"handoff_call", "call_3", "transfer_to_b", `{}`,
			`{"type":"function_call","id":"fc_3","call_id":"call_3","name":"transfer_to_b","arguments":"{}","status":"completed"}`}},
		{state.HandoffOutput("call_3", "transfer_to_b", `{"assistant":"b"}`), fields{"handoff_output", "call_3", "transfer_to_b", `{"assistant":"b"}`,
			`{"type":"function_call_output","call_id":"call_3","output":"{\"assistant\":\"b\"}"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.want.Kind, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, get(tt.item)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.item.Seq() != 0 || tt.item.IsZero() || !json.Valid(tt.item.Raw()) || tt.item.RawLen() != len(tt.want.Raw) {
				t.Errorf("new item: seq %d, zero %v, raw valid %v, RawLen %d", tt.item.Seq(), tt.item.IsZero(), json.Valid(tt.item.Raw()), tt.item.RawLen())
			}
			// ParseItem rebuilds the same item from its JSON (outputs carry
			// no tool name in the Responses API).
			back, err := state.ParseItem(tt.item.Kind(), tt.item.Raw())
			if err != nil {
				t.Fatal(err)
			}
			if tt.item.Kind().IsOutput() {
				back = back.WithName(tt.item.Name())
			}
			if !back.Equal(tt.item) || back.Text() != tt.item.Text() {
				t.Errorf("ParseItem = %s %q, want %s %q", back, back.Text(), tt.item, tt.item.Text())
			}
		})
	}
}

func TestParseItemErrors(t *testing.T) {
	tests := []struct {
		name string
		kind state.Kind
		raw  string
	}{
		{"zero kind", 0, `{"type":"message","role":"user","content":"x"}`},
		{"not JSON", state.KindUserMessage, `{"type":`},
		{"message with the wrong type", state.KindAssistantMessage, `{"type":"reasoning"}`},
		{"call without call_id", state.KindToolCall, `{"type":"function_call","name":"x","arguments":"{}"}`},
		{"call without name", state.KindToolCall, `{"type":"function_call","call_id":"c","arguments":"{}"}`},
		{"output without call_id", state.KindToolOutput, `{"type":"function_call_output","output":"x"}`},
		{"output of the wrong type", state.KindToolOutput, `{"type":"function_call","call_id":"c","name":"x"}`},
		{"reasoning of the wrong type", state.KindReasoning, `{"type":"message"}`},
		{"bad content", state.KindUserMessage, `{"type":"message","content":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if it, err := state.ParseItem(tt.kind, []byte(tt.raw)); err == nil {
				t.Errorf("ParseItem accepted it: %s", it)
			}
		})
	}
	// Content given as parts is joined.
	it, err := state.ParseItem(state.KindUserMessage, []byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`))
	if err != nil || it.Text() != "ab" {
		t.Errorf("ParseItem(parts) = %q, %v; want ab", it.Text(), err)
	}
}

// TestItemCopiesAreDetached checks that nothing handed out aliases an item.
func TestItemCopiesAreDetached(t *testing.T) {
	it := state.ToolCall("fc_1", "call_1", "add", `{"a":1}`).WithSeq(3)
	want := string(it.Raw())

	raw := it.Raw()
	raw[0] = 'X'
	if string(it.Raw()) != want {
		t.Errorf("mutating Raw() changed the item: %s", it.Raw())
	}
	buf := it.AppendRaw(nil)
	buf[1] = 'X'
	if string(it.Raw()) != want {
		t.Errorf("mutating AppendRaw's result changed the item")
	}

	input := []byte(`{"type":"message","role":"user","content":"hi"}`)
	parsed, err := state.ParseItem(state.KindUserMessage, input)
	if err != nil {
		t.Fatal(err)
	}
	copy(input, "XXXXXXXX")
	if string(parsed.Raw()) != `{"type":"message","role":"user","content":"hi"}` {
		t.Errorf("ParseItem kept the caller's buffer: %s", parsed.Raw())
	}

	moved := it.WithSeq(9)
	if it.Seq() != 3 || moved.Seq() != 9 {
		t.Errorf("WithSeq changed the original: %d, %d", it.Seq(), moved.Seq())
	}
	handoff, ok := it.WithKind(state.KindHandoffCall)
	if !ok || handoff.Kind() != state.KindHandoffCall || it.Kind() != state.KindToolCall {
		t.Errorf("WithKind(handoff_call) = %s, %v; original now %s", handoff, ok, it)
	}
	if same, ok := it.WithKind(state.KindUserMessage); ok || same.Kind() != state.KindToolCall {
		t.Errorf("WithKind accepted turning a call into a message")
	}
}

func TestItemsView(t *testing.T) {
	backing := []state.Item{state.UserMessage("a"), state.UserMessage("b"), state.UserMessage("c")}
	v := state.CopyItems(backing)
	backing[0] = state.UserMessage("changed")
	if v.At(0).Text() != "a" {
		t.Errorf("CopyItems view sees changes to the caller's slice")
	}
	s := v.Slice()
	s[1] = state.UserMessage("changed")
	if v.At(1).Text() != "b" {
		t.Errorf("changing Slice()'s result changed the view")
	}
	var all []string
	for i, it := range v.All() {
		all = append(all, string(rune('0'+i))+it.Text())
	}
	if diff := cmp.Diff([]string{"0a", "1b", "2c"}, all); diff != "" {
		t.Errorf("All (-want +got):\n%s", diff)
	}
	from := v.From(1)
	if from.Len() != 2 || from.At(0).Text() != "b" {
		t.Errorf("From(1) = %d items starting %q", from.Len(), from.At(0).Text())
	}
	for range v.All() {
		break // early stop must be honoured
	}

	// A view of a slice with spare capacity is not changed by appends to it.
	grow := make([]state.Item, 1, 8)
	grow[0] = state.UserMessage("x")
	view := state.ItemsOf(grow)
	grow = append(grow, state.UserMessage("y"))
	if view.Len() != 1 || len(grow) != 2 {
		t.Errorf("view grew with the slice: %d", view.Len())
	}
}
