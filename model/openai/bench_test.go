package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

var benchSizes = []int{10, 100, 1000}

// benchHistory returns n items of a typical tool-using history: user
// message, call, output, assistant message, repeated.
func benchHistory(n int) []state.Item {
	items := make([]state.Item, 0, n)
	for i := 0; len(items) < n; i++ {
		id := strconv.Itoa(i)
		for _, it := range []state.Item{
			state.UserMessage("What is the weather in city " + id + "?"),
			state.ToolCall("fc_"+id, "call_"+id, "get_weather", `{"location":"city `+id+`"}`),
			state.ToolOutput("call_"+id, "get_weather", "sunny, 22 degrees"),
			state.AssistantMessage("msg_"+id, "It is sunny in city "+id+", 22 degrees."),
		} {
			if len(items) < n {
				items = append(items, it)
			}
		}
	}
	return items
}

// benchCall is the model call of the request benchmarks: a history of n
// items (benchHistory), instructions and one strict tool, for model.
func benchCall(n int, model string) *pipeline.ModelCall {
	return &pipeline.ModelCall{
		Instructions: "Answer weather questions.", Input: state.ItemsOf(benchHistory(n)),
		Tools: []pipeline.ToolSpec{{
			Name: "get_weather", Description: "Get the weather.", Strict: true,
			Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}`),
		}},
		Settings: pipeline.ModelSettings{Model: model},
	}
}

// BenchmarkRequest measures building the request for a history of n items
// and encoding it as the client does (params → JSON body).
func BenchmarkRequest(b *testing.B) {
	m := &Model{}
	for _, n := range benchSizes {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			c := benchCall(n, "gpt-5-mini")
			b.ReportAllocs()
			for b.Loop() {
				p, err := m.params(c, c.Input)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
		})
	}
}

// benchResponse returns a Responses API response body with n output
// items: reasoning, call, message, repeated.
func benchResponse(n int) []byte {
	var out bytes.Buffer
	out.WriteString(`{"id":"resp_1","object":"response","status":"completed","error":null,"model":"gpt-5-mini","output":[`)
	for i := range n {
		if i > 0 {
			out.WriteByte(',')
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(&out, `{"type":"reasoning","id":"rs_%d","summary":[{"type":"summary_text","text":"Think about step %d."}],"encrypted_content":"gAAAAABor0Aw-encrypted-blob-%d=="}`, i, i, i)
		case 1:
			fmt.Fprintf(&out, `{"type":"function_call","id":"fc_%d","call_id":"call_%d","name":"get_weather","arguments":"{\"location\":\"city %d\"}","status":"completed"}`, i, i, i)
		default:
			fmt.Fprintf(&out, `{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":"It is sunny in city %d, 22 degrees.","annotations":[]}]}`, i, i)
		}
	}
	out.WriteString(`],"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":0},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":150}}`)
	return out.Bytes()
}

// BenchmarkParse measures turning a response body into items; the
// "sdk-typed" variant decodes the same body into openai-go's
// responses.Response, for comparison.
func BenchmarkParse(b *testing.B) {
	for _, n := range benchSizes[:2] {
		body := benchResponse(n)
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseResponse(body); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
		})
		b.Run("sdk-typed/items="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r responses.Response
				if err := json.Unmarshal(body, &r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
		})
	}
}

// BenchmarkParseStream measures reading a stream whose terminal event
// carries n output items, with one output_item.done event per item.
func BenchmarkParseStream(b *testing.B) {
	for _, n := range benchSizes[:2] {
		body := benchResponse(n)
		var resp responseBody
		if err := json.Unmarshal(body, &resp); err != nil {
			b.Fatal(err)
		}
		var sse bytes.Buffer
		for i, it := range resp.Output {
			fmt.Fprintf(&sse, "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":%d,\"item\":%s}\n\n", i, it)
		}
		fmt.Fprintf(&sse, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":%s}\n\n", body)
		data := sse.Bytes()
		c := &pipeline.ModelCall{Stream: true}
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))}
				dec := ssestream.NewDecoder(res)
				if _, err := readResponseStream(dec, c); err != nil {
					b.Fatal(err)
				}
				dec.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
		})
	}
}

// BenchmarkChatStream measures reading a Chat Completions stream of n
// chunks: text deltas, then two tool calls whose arguments arrive in
// pieces, then the finish reason and usage.
func BenchmarkChatStream(b *testing.B) {
	for _, n := range benchSizes[:2] {
		var sse bytes.Buffer
		chunk := func(delta string) {
			fmt.Fprintf(&sse, "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5-mini\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
		}
		for i := range n / 2 {
			chunk(fmt.Sprintf(`{"content":"word %d "}`, i))
		}
		for k := range 2 {
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":"get_weather","arguments":""}}]}`, k, k))
			for i := range (n - n/2) / 2 {
				chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":"{\"p%d\":1}"}}]}`, k, i))
			}
		}
		sse.WriteString("data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":50,\"total_tokens\":150}}\n\ndata: [DONE]\n\n")
		data := sse.Bytes()
		c := &pipeline.ModelCall{Stream: true}
		b.Run("chunks="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))}
				if _, err := readChatStream(res, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChatBody measures the Chat Completions adapter's own work on a
// plain call's request: checking the items and tools and writing the
// body for a history of n items, into a buffer kept between calls as
// Respond keeps it.
func BenchmarkChatBody(b *testing.B) {
	m := &ChatModel{}
	for _, n := range benchSizes {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			c := benchCall(n, "gpt-4o-mini")
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				body, err := m.body(buf[:0], c)
				if err != nil {
					b.Fatal(err)
				}
				buf = body
			}
		})
	}
}
