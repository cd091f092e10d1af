package openai

import (
	"os"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// TestChatStreamInterleavedCalls reads a stream whose two parallel tool
// calls' arguments arrive interleaved: the second call's first delta
// grows the stream's calls while the first's arguments are still
// arriving. Both calls must come out whole. (The arguments were kept in
// strings.Builders, which the growth copied; the first call's next delta
// then panicked.)
func TestChatStreamInterleavedCalls(t *testing.T) {
	body, err := os.ReadFile("testdata/chat_stream_parallel.sse")
	if err != nil {
		t.Fatal(err)
	}
	out, err := readChatStream(sseResponse(body), fuzzCall(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, name, args string }{
		{"call_a", "get_weather", `{"location":"Paris"}`},
		{"call_b", "get_time", `{"zone":"CET\u00e9"}`},
	}
	var calls []state.Item
	for _, it := range out.Items {
		if it.Kind() == state.KindToolCall {
			calls = append(calls, it)
		}
	}
	if len(calls) != len(want) {
		t.Fatalf("%d tool calls, want %d: %v", len(calls), len(want), out.Items)
	}
	for i, w := range want {
		if c := calls[i]; c.CallID() != w.id || c.Name() != w.name || c.Text() != w.args {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, c.CallID(), c.Name(), c.Text(), w.id, w.name, w.args)
		}
	}
}
