package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// The Anthropic adapter's own cost per call against the SDK call alone.
//
// "sdk" is the anthropic-sdk-go call the adapter makes, alone: the client's
// Post of a request body built beforehand, as bytes (the SDK does not
// marshal it again), with the plain call's timeout chosen as Messages.New
// chooses it, the response read as bytes (plain) or as the SDK's decoded
// server-sent events (stream), nothing decoded into items. Streamed, the
// adapter reads the events with a reader of its own since issue 29's
// fourth round, so "sdk-post" is the SDK's part of its call: the Post,
// the body read through unparsed; adapter − sdk-post is then its whole
// own cost (reading the events included), adapter − sdk its cost over
// the SDK's cheapest way to read the same events. "sdk-params" is
// the same call through Messages.New with the body set on the params
// (param.SetJSON), which the SDK marshals again: the adapter's path before
// it posted the bytes. "adapter" is Model.Respond for the same call: it builds that
// body from the run's items and tools, makes the same SDK call and turns
// the response into items. adapter − sdk is the adapter's own cost. The
// transport is an in-memory http.RoundTripper answering a recorded
// response (so the SDK's cost is its own, without the kernel's), and
// "loopback" runs the same over an httptest server. "sdk-typed" is what
// a program using the SDK alone pays for the same call: the same request
// as typed params (MessageNewParams, its messages, blocks and tools built
// once, as a program holding its history would), sent with Messages.New
// (the response decoded into a Message) or Messages.NewStreaming (every
// event read and added to a Message with Message.Accumulate, as the SDK's
// documentation shows); TestAnthropicTypedRequest checks that it sends
// the adapter's request. The bare Post ("sdk", "sdk-post") is a floor no
// program using the SDK alone pays; sdk-typed is what the issue's "the
// SDK's cost for the same call" costs such a program.

// anthropicHistory is a call's input: a conversation of n turns, each a
// user message, a call of get_weather and its output, and an answer.
func anthropicHistory(n int) []state.Item {
	items := make([]state.Item, 0, 4*n)
	for i := range n {
		id := fmt.Sprintf("toolu_%04d", i)
		items = append(items,
			state.UserMessage(fmt.Sprintf("What is the weather in city %d today?", i)),
			state.ToolCall("", id, "get_weather", fmt.Sprintf(`{"city":"City %d"}`, i)),
			state.ToolOutput(id, "get_weather", "sunny, 22C, light wind from the west"),
			state.AssistantMessage("msg", fmt.Sprintf("It is sunny and 22C in city %d, with a light west wind.", i)),
		)
	}
	return items
}

var anthropicTools = []pipeline.ToolSpec{
	{Name: "get_weather", Description: "Current weather in a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "get_forecast", Description: "Forecast for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`)},
}

// anthropicReply is the recorded response: a text block and a tool_use.
const anthropicReply = `{"id":"msg_01AbCdEfGhIjKlMnOpQrStUv","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"content":[{"type":"text","text":"Let me check the forecast for Paris for the next three days."},` +
	`{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_forecast","input":{"city":"Paris","days":3}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,` +
	`"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":89,"service_tier":"standard"}}`

// anthropicStream is the same response as the documented event stream.
func anthropicStream() []byte {
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

// memTransport answers every request with the recorded response, in
// memory: the event stream when the body asks for one ("stream": true,
// which the SDK sets), the JSON object otherwise.
type memTransport struct{ plain, stream []byte }

func (t *memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var req []byte
	if r.Body != nil {
		req, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	body, ct := t.plain, "application/json"
	if bytes.Contains(req, []byte(`"stream":true`)) {
		body, ct = t.stream, "text/event-stream"
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}, "Request-Id": {"req_bench"}}, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}, nil
}

func anthropicClients(b *testing.B) map[string]sdk.Client {
	plain, stream := []byte(anthropicReply), anthropicStream()
	mem := &http.Client{Transport: &memTransport{plain: plain, stream: stream}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Request-Id", "req_bench")
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(plain)
	}))
	b.Cleanup(srv.Close)
	mk := func(hc *http.Client, url string) sdk.Client {
		return sdk.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-ant-bench"), option.WithHTTPClient(hc), option.WithMaxRetries(0))
	}
	return map[string]sdk.Client{"memory": mk(mem, "http://anthropic.invalid"), "loopback": mk(srv.Client(), srv.URL)}
}

// BenchmarkAnthropic reports, per transport and mode, the SDK call alone
// and the adapter's Respond for the same call at 10 turns of history.
func BenchmarkAnthropic(b *testing.B) {
	clients := anthropicClients(b)
	history := anthropicHistory(10)
	for _, transport := range []string{"memory", "loopback"} {
		client := clients[transport]
		m := anthropic.New(client, anthropic.WithModel("claude-sonnet-4-5"))
		for _, stream := range []bool{false, true} {
			mode := "plain"
			if stream {
				mode = "stream"
			}
			call := &pipeline.ModelCall{
				Agent: &pipeline.Agent{Name: "weather"}, Instructions: "You answer questions about the weather.",
				Input: state.ItemsOf(history), Tools: anthropicTools, Stream: stream,
			}
			// The body the adapter sends, captured once, for the SDK-alone call.
			body := capturedBody(b, call)
			b.Run(transport+"/"+mode+"/sdk", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if stream {
						sinkErr = sdkStreamPost(client, body)
					} else {
						sinkErr = sdkPlainPost(client, body)
					}
				}
			})
			if stream {
				b.Run(transport+"/"+mode+"/sdk-post", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						sinkErr = sdkStreamBody(client, body)
					}
				})
			}
			b.Run(transport+"/"+mode+"/sdk-params", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p := sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 4096}
					param.SetJSON(body, &p)
					if stream {
						sinkErr = sdkStreamRaw(client, p)
					} else {
						sinkErr = sdkPlainRaw(client, p)
					}
				}
			})
			b.Run(transport+"/"+mode+"/adapter", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_, sinkErr = m.Respond(context.Background(), call)
				}
			})
			b.Run(transport+"/"+mode+"/sdk-typed", func(b *testing.B) {
				typed := anthropicTypedCall(client, typedParams(history), stream)
				b.ReportAllocs()
				for b.Loop() {
					sinkErr = typed()
				}
			})
		}
	}
}

var sinkErr error

// anthropicTypedCall returns the call of BenchmarkAnthropic's sdk-typed
// rows: p sent with Messages.New into a Message, or with
// Messages.NewStreaming, every event added to a Message with
// Message.Accumulate.
func anthropicTypedCall(client sdk.Client, p sdk.MessageNewParams, stream bool) func() error {
	ctx := context.Background()
	if !stream {
		return func() error {
			_, err := client.Messages.New(ctx, p)
			return err
		}
	}
	return func() error {
		s := client.Messages.NewStreaming(ctx, p)
		var msg sdk.Message
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				s.Close()
				return err
			}
		}
		if err := s.Close(); err != nil {
			return err
		}
		return s.Err()
	}
}

func sdkPlainRaw(client sdk.Client, p sdk.MessageNewParams) error {
	var body []byte
	_, err := client.Messages.New(context.Background(), p, option.WithResponseBodyInto(&body))
	return err
}

// sdkPlainPost is the adapter's plain call, alone: the timeout Messages.New
// would choose, the body posted as bytes, the response read as bytes.
func sdkPlainPost(client sdk.Client, body []byte) error {
	timeout, err := sdk.CalculateNonStreamingTimeout(4096, "claude-sonnet-4-5", client.Options)
	if err != nil {
		return err
	}
	var (
		out []byte
		res *http.Response
	)
	return client.Post(context.Background(), "v1/messages", body, &out, option.WithRequestTimeout(timeout), option.WithResponseInto(&res))
}

// sdkStreamPost is the adapter's streamed call, alone: the body (which
// asks for a stream) posted as bytes, the events decoded by the SDK.
func sdkStreamPost(client sdk.Client, body []byte) error {
	var res *http.Response
	if err := client.Post(context.Background(), "v1/messages", body, &res); err != nil {
		return err
	}
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	for dec.Next() {
	}
	return dec.Err()
}

// sdkStreamBody is the SDK's part of the adapter's streamed call since
// the adapter reads the events itself: the body posted as bytes, the
// response's body read through and closed, no event decoded.
func sdkStreamBody(client sdk.Client, body []byte) error {
	var res *http.Response
	if err := client.Post(context.Background(), "v1/messages", body, &res); err != nil {
		return err
	}
	defer res.Body.Close()
	_, err := io.Copy(io.Discard, res.Body)
	return err
}

func sdkStreamRaw(client sdk.Client, p sdk.MessageNewParams) error {
	var res *http.Response
	s := client.Messages.NewStreaming(context.Background(), p, option.WithResponseBodyInto(&res))
	if err := s.Err(); err != nil {
		return err
	}
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	for dec.Next() {
	}
	return dec.Err()
}

// capturedBody returns the request body the adapter sends for call.
func capturedBody(b testing.TB, call *pipeline.ModelCall) []byte {
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		if call.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(anthropicStream())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(anthropicReply))
	}))
	defer srv.Close()
	c := *call
	probe := anthropic.New(sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0)),
		anthropic.WithModel("claude-sonnet-4-5"))
	if _, err := probe.Respond(context.Background(), &c); err != nil {
		b.Fatal(err)
	}
	return got
}

// typedParams builds, with the SDK's own types, the request the adapter
// builds from history: what a program without turnkit writes.
func typedParams(history []state.Item) sdk.MessageNewParams {
	var msgs []sdk.MessageParam
	for i := 0; i+3 < len(history); i += 4 {
		u, c, o, a := history[i], history[i+1], history[i+2], history[i+3]
		msgs = append(msgs,
			sdk.NewUserMessage(sdk.NewTextBlock(u.Text())),
			sdk.NewAssistantMessage(sdk.NewToolUseBlock(c.CallID(), json.RawMessage(c.Text()), c.Name())),
			// A tool_result's content is a list of blocks in the SDK's
			// types; NewToolResultBlock would also set is_error.
			sdk.NewUserMessage(sdk.ContentBlockParamUnion{OfToolResult: &sdk.ToolResultBlockParam{
				ToolUseID: o.CallID(), Content: []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: o.Text()}}},
			}}),
			sdk.NewAssistantMessage(sdk.NewTextBlock(a.Text())),
		)
	}
	tools := make([]sdk.ToolUnionParam, len(anthropicTools))
	for i, t := range anthropicTools {
		var schema sdk.ToolInputSchemaParam
		_ = json.Unmarshal(t.Parameters, &schema)
		tools[i] = sdk.ToolUnionParam{OfTool: &sdk.ToolParam{Name: t.Name, Description: param.NewOpt(t.Description), InputSchema: schema}}
	}
	return sdk.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 4096,
		System:   []sdk.TextBlockParam{{Text: "You answer questions about the weather."}},
		Messages: msgs, Tools: tools,
	}
}

// recordTransport keeps the body of the last request it is given and
// answers as next does.
type recordTransport struct {
	next http.RoundTripper
	body []byte
}

func (t *recordTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body.Close()
	t.body = b
	r.Body = io.NopCloser(bytes.NewReader(b))
	return t.next.RoundTrip(r)
}

// TestAnthropicTypedRequest checks that BenchmarkAnthropic's sdk-typed
// rows send the request the adapter sends, plain and streamed: the same
// JSON once a tool_result's content given as a string (the adapter's) is
// written as the one text block the API reads it as (the SDK's types have
// only the list), and that both calls read the same response.
func TestAnthropicTypedRequest(t *testing.T) {
	history := anthropicHistory(10)
	p := typedParams(history)
	for _, stream := range []bool{false, true} {
		call := &pipeline.ModelCall{
			Agent: &pipeline.Agent{Name: "weather"}, Instructions: "You answer questions about the weather.",
			Input: state.ItemsOf(history), Tools: anthropicTools, Stream: stream,
		}
		want := normalRequest(t, capturedBody(t, call))
		rec := &recordTransport{next: &memTransport{plain: []byte(anthropicReply), stream: anthropicStream()}}
		client := sdk.NewClient(option.WithBaseURL("http://anthropic.invalid"), option.WithAPIKey("k"),
			option.WithHTTPClient(&http.Client{Transport: rec}), option.WithMaxRetries(0))
		var msg sdk.Message
		if stream {
			s := client.Messages.NewStreaming(context.Background(), p)
			for s.Next() {
				if err := msg.Accumulate(s.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			m, err := client.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			msg = *m
		}
		got := normalRequest(t, rec.body)
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("stream %v: the typed SDK call sends\n%s\nthe adapter sends\n%s", stream, g, w)
		}
		if len(msg.Content) != 2 || msg.Content[1].Name != "get_forecast" || string(msg.Content[1].Input) != `{"city":"Paris","days":3}` && string(msg.Content[1].Input) != `{"city": "Paris", "days": 3}` {
			t.Errorf("stream %v: the typed call read %+v", stream, msg.Content)
		}
	}
}

// normalRequest decodes a request body, each tool_result's string content
// written as the list of one text block it stands for.
func normalRequest(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var req map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&req); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		t.Fatalf("no messages: %s", body)
	}
	for _, m := range msgs {
		blocks, _ := m.(map[string]any)["content"].([]any)
		for _, blk := range blocks {
			blk := blk.(map[string]any)
			if s, ok := blk["content"].(string); ok && blk["type"] == "tool_result" {
				blk["content"] = []any{map[string]any{"type": "text", "text": s}}
			}
		}
	}
	return req
}
