package rowcodec

import (
	"errors"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// FuzzDecode feeds Decode, which the SQLite and PostgreSQL stores call on
// every row they read (ScanItem), arbitrary rows. It must never panic; a
// refusal wraps session.ErrCorrupt; an item it returns is one an append
// accepts, stored again as the same row, and decoded again equal.
func FuzzDecode(f *testing.F) {
	for _, it := range []state.Item{
		state.UserMessage("hi"),
		state.AssistantMessage("msg_1", "hello"),
		state.Reasoning("rs_1", "think"),
		state.ToolCall("fc_1", "call_1", "lookup", `{"q":"x"}`),
		state.ToolOutput("call_1", "lookup", `"found"`),
		state.CustomCall("ct_1", "call_2", "grep", "a.*b"),
		state.CustomOutput("call_2", "grep", "3 lines"),
	} {
		f.Add(it.Kind().String(), int64(3), it.Name(), []byte(it.Raw()))
	}
	f.Add("user_message", int64(0), "", []byte(`{"type":"message","role":"user","content":"hi"}`))
	f.Add("tool_call", int64(1), "x", []byte(`{"type":"function_call","call_id":"","name":"x","arguments":"{}"}`))
	f.Add("no_such_kind", int64(1), "", []byte(`{}`))
	f.Fuzz(func(t *testing.T, kind string, seq int64, name string, raw []byte) {
		it, err := Decode(kind, seq, name, raw)
		if err != nil {
			if !errors.Is(err, session.ErrCorrupt) {
				t.Fatalf("Decode error %v does not wrap session.ErrCorrupt", err)
			}
			if !it.IsZero() {
				t.Fatal("an item returned with an error")
			}
			return
		}
		if err := Validate("fuzz", "s", "r", []state.Item{it}); err != nil {
			t.Fatalf("Decode returned an item no append stores: %v", err)
		}
		if !Same(it, kind, name, raw) {
			t.Fatalf("item %s is not stored as the row it came from", it)
		}
		again, err := Decode(it.Kind().String(), it.Seq(), it.Name(), it.Raw())
		if err != nil {
			t.Fatalf("Decode of the row of a decoded item: %v", err)
		}
		if !again.Equal(it) || again.Name() != it.Name() || again.Seq() != it.Seq() {
			t.Fatalf("decoded again as %s, want %s", again, it)
		}
	})
}

// TestDecodeRefusesCorruptRows: a row no append writes fails with
// session.ErrCorrupt, a position below 1 included (Validate refuses one
// on append, so Decode refuses one on load).
func TestDecodeRefusesCorruptRows(t *testing.T) {
	t.Parallel()
	msg := []byte(`{"type":"message","role":"user","content":"hi"}`)
	tests := []struct {
		name, kind string
		seq        int64
		raw        []byte
	}{
		{"position 0", "user_message", 0, msg},
		{"negative position", "user_message", -1, msg},
		{"unknown kind", "no_such_kind", 1, msg},
		{"not JSON", "user_message", 1, []byte(`{"type":`)},
		{"call without call ID", "tool_call", 1, []byte(`{"type":"function_call","name":"x","arguments":"{}"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Decode(tt.kind, tt.seq, "", tt.raw); !errors.Is(err, session.ErrCorrupt) {
				t.Errorf("Decode = %v, want session.ErrCorrupt", err)
			}
		})
	}
}
