package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// The adapter's own work per call, without the SDK: building the request
// body, reading a response body, reading a stream's events. bench/ runs
// the whole call against the SDK alone.

func benchCall(turns int) *pipeline.ModelCall {
	items := make([]state.Item, 0, 4*turns)
	for i := range turns {
		id := fmt.Sprintf("toolu_%04d", i)
		items = append(items,
			state.UserMessage(fmt.Sprintf("What is the weather in city %d today?", i)),
			state.ToolCall("", id, "get_weather", fmt.Sprintf(`{"city":"City %d"}`, i)),
			state.ToolOutput(id, "get_weather", "sunny, 22C, light wind from the west"),
			state.AssistantMessage("msg", fmt.Sprintf("It is sunny and 22C in city %d, with a light west wind.", i)),
		)
	}
	return &pipeline.ModelCall{
		Agent: &pipeline.Agent{Name: "weather"}, Instructions: "You answer questions about the weather.",
		Input: state.ItemsOf(items),
		Tools: []pipeline.ToolSpec{
			{Name: "get_weather", Description: "Current weather in a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_forecast", Description: "Forecast for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`)},
		},
	}
}

const benchReply = `{"id":"msg_01AbCdEfGhIjKlMnOpQrStUv","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"content":[{"type":"text","text":"Let me check the forecast for Paris for the next three days."},` +
	`{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_forecast","input":{"city":"Paris","days":3}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,` +
	`"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":89,"service_tier":"standard"}}`

func benchStream() []byte {
	var b bytes.Buffer
	ev := func(typ, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_01AbCdEfGhIjKlMnOpQrStUv","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("ping", `{"type":"ping"}`)
	for _, w := range strings.SplitAfter("Let me check the forecast for Paris for the next three days.", " ") {
		d, _ := json.Marshal(w)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(d)+`}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_forecast","input":{}}}`)
	for _, p := range []string{`{"city":`, ` "Paris"`, `, "days": 3}`} {
		d, _ := json.Marshal(p)
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":`+string(d)+`}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.Bytes()
}

var (
	sinkReq  request
	sinkResp *pipeline.ModelResponse
	sinkErr  error
)

func BenchmarkOwnBuild(b *testing.B) {
	m := New(sdkClientForBench(), WithModel("claude-sonnet-4-5"))
	c := benchCall(10)
	b.ReportAllocs()
	for b.Loop() {
		sinkReq, sinkErr = m.build(c)
	}
}

func BenchmarkOwnParse(b *testing.B) {
	body := []byte(benchReply)
	b.ReportAllocs()
	for b.Loop() {
		sinkResp, sinkErr = parseMessage(body, "")
	}
}

// BenchmarkOwnReadStream reads the events as a call does, with the
// adapter's reader (sseReader); compare with BenchmarkSDKDecodeStream, the
// SDK's decoder alone, which the adapter used before.
func BenchmarkOwnReadStream(b *testing.B) {
	data := benchStream()
	c := &pipeline.ModelCall{}
	b.ReportAllocs()
	for b.Loop() {
		dec := newEvents(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))})
		sinkResp, sinkErr = readStream(dec, c, "")
		dec.Close()
	}
}

func BenchmarkSDKDecodeStream(b *testing.B) {
	data := benchStream()
	b.ReportAllocs()
	for b.Loop() {
		dec := ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))})
		for dec.Next() {
		}
		sinkErr = dec.Close()
	}
}

func sdkClientForBench() sdk.Client { return sdk.NewClient(option.WithAPIKey("k")) }

// BenchmarkValidJSON checks a response body with jsonscan.Valid and with
// json.Valid, which it replaced.
func BenchmarkValidJSON(b *testing.B) {
	body := []byte(benchReply)
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			sinkBool = jsonscan.Valid(body)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			sinkBool = json.Valid(body)
		}
	})
}

var sinkBool bool
