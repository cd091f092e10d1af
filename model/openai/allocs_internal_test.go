package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestAllocBudgets pins the allocations of the adapters' own work on a
// call of 100 items of history (benchHistory) and two tools: building
// the request's params. Lower a budget when a change cuts allocations,
// with the reason beside it.
func TestAllocBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	tools := []pipeline.ToolSpec{
		{Name: "get_weather", Description: "Current weather.", Strict: true, Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}`)},
		{Name: "get_forecast", Description: "Forecast.", Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}}}`)},
	}
	c := &pipeline.ModelCall{Instructions: "Answer weather questions.", Input: state.ItemsOf(benchHistory(100)), Tools: tools,
		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
	m, chat := &Model{}, &ChatModel{}
	sse, err := os.ReadFile("testdata/stream_text.sse")
	if err != nil {
		t.Fatal(err)
	}
	chatSSE, err := os.ReadFile("testdata/chat_stream_tool_call.sse")
	if err != nil {
		t.Fatal(err)
	}
	budgets := []struct {
		name   string
		allocs float64
		why    string
		f      func()
	}{
		{"responses params", 7, "the input's buffer, its boxing and its override (param.Override allocates the union), the tools' list, their one buffer and their boxing (param.SetJSON); 16 while each tool was a buffer of its own grown from nil and an override", func() {
			if _, err := m.params(c, c.Input); err != nil {
				t.Fatal(err)
			}
		}},
		{"chat params", 2, "the whole body in one buffer sized from the items' JSON and its boxing (param.SetJSON on the params); 109 while each message and tool was set on its own union (one boxing each: 101 messages, 2 tools) and cut from a buffer of all of them, 501 while each message was a buffer of its own grown from nil, set with param.Override (which allocates the union)", func() {
			if _, _, err := chat.params(c, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"read responses stream", 46, "testdata/stream_text.sse (10 events) for a call whose events reach nobody, the SDK's decoder included: the events the reader does nothing with (the response's creation and progress, the parts added and done, the text's deltas) checked as JSON, not decoded, the others (items done, the response completed) read with the scanner (streamEvent.decode), and each output item's type read without encoding/json and not compacted again when it is compact (itemHead); 156 when every event was decoded, 73 when each item's type was decoded and each item compacted, 63 while the events read were decoded by encoding/json", func() {
			res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(sse))}
			dec := ssestream.NewDecoder(res)
			if _, err := readResponseStream(dec, &pipeline.ModelCall{Stream: true}); err != nil {
				t.Fatal(err)
			}
			dec.Close()
		}},
		{"read chat stream", 36, "testdata/chat_stream_tool_call.sse for a call whose events reach nobody, the SDK's decoder included: every chunk read into one chunkView, not decoded by encoding/json; 133 when each chunk was", func() {
			res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(chatSSE))}
			if _, err := readChatStream(res, &pipeline.ModelCall{Stream: true}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, bg := range budgets {
		got := testing.AllocsPerRun(50, bg.f)
		if os.Getenv("TURNKIT_ALLOCS_PRINT") != "" {
			t.Logf("%s: %v allocations (budget %v)", bg.name, got, bg.allocs)
		}
		if got > bg.allocs {
			t.Errorf("%s: %v allocations, over its budget of %v (%s)", bg.name, got, bg.allocs, bg.why)
		}
	}
}
