package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// The OpenAI adapters' own cost per call (model/openai's Model over the
// Responses API and ChatModel over Chat Completions) against openai-go
// alone, at 10 and 100 items of history, plain and streamed, over an
// in-memory transport answering a recorded response (so that neither a
// server nor the kernel is measured).
//
// "adapter" is Respond: it builds the request from the run's items and
// tools, makes its call through the client and turns the response into
// items. "sdk" is that client call alone, on the params the adapter
// builds (the same raw JSON pieces set with param.Override, or for Chat
// Completions the whole body set with param.SetJSON, built once outside
// the loop) and with the same request options: the response read
// as bytes (plain), or the events split by the SDK's decoder and nothing
// decoded (streamed, as the adapter reads them). adapter − sdk is the
// adapter's own cost. "sdk-typed" is what a program using openai-go alone
// pays for the same call: the same request as typed params (built once, as
// a program holding its history would), sent with Responses.New into a
// responses.Response, Responses.NewStreaming with every event decoded,
// Chat.Completions.New into a ChatCompletion, or
// Chat.Completions.NewStreaming with every chunk added to a
// ChatCompletionAccumulator (openai-go's documented way).
// TestOpenAIRequests checks that all three send the same request.

const openaiInstructions = "You answer questions about the weather."

// openaiHistory is a call's input: n items of a tool-using conversation
// (user message, call of get_weather, its output, answer, repeated), then
// the user's new question.
func openaiHistory(n int) []state.Item {
	items := make([]state.Item, 0, n+1)
	for i := 0; len(items) < n; i++ {
		id := strconv.Itoa(i)
		for _, it := range []state.Item{
			state.UserMessage("What is the weather in city " + id + " today?"),
			state.ToolCall("fc_"+id, "call_"+id, "get_weather", `{"location":"City `+id+`"}`),
			state.ToolOutput("call_"+id, "get_weather", "sunny, 22C, light wind from the west"),
			state.AssistantMessage("msg_"+id, "It is sunny and 22C in city "+id+", with a light west wind."),
		} {
			if len(items) < n {
				items = append(items, it)
			}
		}
	}
	return append(items, state.UserMessage("And in Paris?"))
}

var openaiTools = []pipeline.ToolSpec{
	{Name: "get_weather", Description: "Current weather in a city.", Strict: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}`)},
	{Name: "get_forecast", Description: "Forecast for a city.", Strict: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"},"days":{"type":"integer"}},"required":["location","days"],"additionalProperties":false}`)},
}

// The recorded answer, in each API's documented shape: a short text and
// a call of get_forecast (after a reasoning item, for the Responses API).
const (
	openaiText      = "Let me check the forecast for Paris for the next three days."
	openaiArgs      = `{"location":"Paris","days":3}`
	openaiReasoning = `{"id":"rs_68af4030592c81938ec0a5fbab4a3e9f","type":"reasoning","summary":[],"encrypted_content":"gAAAAABor0Aw-encrypted-reasoning-blob-of-the-model=="}`
	openaiMessage   = `{"id":"msg_68af4031b2e481939b5b1e5d4c0a3e9f","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + openaiText + `","annotations":[],"logprobs":[]}]}`
	openaiFnCall    = `{"id":"fc_68af4032c1a881938e0e3f4b5a7c3e9f","type":"function_call","status":"completed","arguments":"{\"location\":\"Paris\",\"days\":3}","call_id":"call_unLAR8MvFNptuiZK6K6HCy5k","name":"get_forecast"}`
	openaiUsage     = `{"input_tokens":1472,"input_tokens_details":{"cached_tokens":1280},"output_tokens":89,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":1561}`
)

// openaiResponse returns a response object with status and output.
func openaiResponse(status, output, usage string) string {
	return `{"id":"resp_68af402f7a408193a1e6b1c2d3e4f5a6","object":"response","created_at":1764633600,"status":"` + status + `","background":false,"error":null,"incomplete_details":null,` +
		`"instructions":"` + openaiInstructions + `","max_output_tokens":null,"model":"gpt-5-mini-2025-08-07","output":[` + output + `],"parallel_tool_calls":true,` +
		`"previous_response_id":null,"reasoning":{"effort":"medium","summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},` +
		`"tool_choice":"auto","top_p":1.0,"truncation":"disabled","usage":` + usage + `,"user":null,"metadata":{}}`
}

// openaiResponsesStream is the same response as the documented event
// stream.
func openaiResponsesStream() []byte {
	var b bytes.Buffer
	seq := 0
	ev := func(typ, rest string) {
		fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, rest)
		seq++
	}
	inProgress := openaiResponse("in_progress", "", "null")
	ev("response.created", `"response":`+inProgress)
	ev("response.in_progress", `"response":`+inProgress)
	ev("response.output_item.added", `"output_index":0,"item":{"id":"rs_68af4030592c81938ec0a5fbab4a3e9f","type":"reasoning","summary":[]}`)
	ev("response.output_item.done", `"output_index":0,"item":`+openaiReasoning)
	const msgID = `"item_id":"msg_68af4031b2e481939b5b1e5d4c0a3e9f","output_index":1,"content_index":0`
	ev("response.output_item.added", `"output_index":1,"item":{"id":"msg_68af4031b2e481939b5b1e5d4c0a3e9f","type":"message","status":"in_progress","role":"assistant","content":[]}`)
	ev("response.content_part.added", msgID+`,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`)
	for _, w := range strings.SplitAfter(openaiText, " ") {
		d, _ := json.Marshal(w)
		ev("response.output_text.delta", msgID+`,"delta":`+string(d)+`,"logprobs":[],"obfuscation":"Xy1"`)
	}
	ev("response.output_text.done", msgID+`,"text":"`+openaiText+`","logprobs":[]`)
	ev("response.content_part.done", msgID+`,"part":{"type":"output_text","text":"`+openaiText+`","annotations":[],"logprobs":[]}`)
	ev("response.output_item.done", `"output_index":1,"item":`+openaiMessage)
	const fcID = `"item_id":"fc_68af4032c1a881938e0e3f4b5a7c3e9f","output_index":2`
	ev("response.output_item.added", `"output_index":2,"item":{"id":"fc_68af4032c1a881938e0e3f4b5a7c3e9f","type":"function_call","status":"in_progress","arguments":"","call_id":"call_unLAR8MvFNptuiZK6K6HCy5k","name":"get_forecast"}`)
	for _, p := range []string{`{"location":`, `"Paris",`, `"days":3}`} {
		d, _ := json.Marshal(p)
		ev("response.function_call_arguments.delta", fcID+`,"delta":`+string(d)+`,"obfuscation":"Ab2"`)
	}
	d, _ := json.Marshal(openaiArgs)
	ev("response.function_call_arguments.done", fcID+`,"arguments":`+string(d))
	ev("response.output_item.done", `"output_index":2,"item":`+openaiFnCall)
	ev("response.completed", `"response":`+openaiResponse("completed", openaiReasoning+","+openaiMessage+","+openaiFnCall, openaiUsage))
	return b.Bytes()
}

// openaiChatCompletion is the answer as a chat completion.
const openaiChatCompletion = `{"id":"chatcmpl-CX7kLmNoPqRsTuVwXyZaBcDeFgHi","object":"chat.completion","created":1764633600,"model":"gpt-4o-mini-2024-07-18",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"` + openaiText + `","refusal":null,` +
	`"tool_calls":[{"id":"call_unLAR8MvFNptuiZK6K6HCy5k","type":"function","function":{"name":"get_forecast","arguments":"{\"location\":\"Paris\",\"days\":3}"}}],` +
	`"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":1472,"completion_tokens":89,"total_tokens":1561,"prompt_tokens_details":{"cached_tokens":1280,"audio_tokens":0},` +
	`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},` +
	`"service_tier":"default","system_fingerprint":"fp_560af6e559"}`

// openaiChatStream is the same answer as the documented chunk stream,
// usage included (stream_options.include_usage).
func openaiChatStream() []byte {
	var b bytes.Buffer
	chunk := func(choices, usage string) {
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-CX7kLmNoPqRsTuVwXyZaBcDeFgHi","object":"chat.completion.chunk","created":1764633600,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":%s,"usage":%s,"obfuscation":"Xy1"}`+"\n\n", choices, usage)
	}
	delta := func(d, finish string) string {
		return `[{"index":0,"delta":` + d + `,"logprobs":null,"finish_reason":` + finish + `}]`
	}
	chunk(delta(`{"role":"assistant","content":"","refusal":null}`, "null"), "null")
	for _, w := range strings.SplitAfter(openaiText, " ") {
		d, _ := json.Marshal(w)
		chunk(delta(`{"content":`+string(d)+`}`, "null"), "null")
	}
	chunk(delta(`{"tool_calls":[{"index":0,"id":"call_unLAR8MvFNptuiZK6K6HCy5k","type":"function","function":{"name":"get_forecast","arguments":""}}]}`, "null"), "null")
	for _, p := range []string{`{"location":`, `"Paris",`, `"days":3}`} {
		d, _ := json.Marshal(p)
		chunk(delta(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(d)+`}}]}`, "null"), "null")
	}
	chunk(delta(`{}`, `"tool_calls"`), "null")
	chunk(`[]`, `{"prompt_tokens":1472,"completion_tokens":89,"total_tokens":1561,"prompt_tokens_details":{"cached_tokens":1280,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// openaiTransport answers every request in memory with the recorded
// response of its API (by path), as an event stream when the body asks
// for one. It keeps the last request's body when record is set.
type openaiTransport struct {
	responses, responsesStream, chat, chatStream []byte
	record                                       bool
	body                                         []byte
}

func newOpenAITransport() *openaiTransport {
	return &openaiTransport{
		responses: []byte(openaiResponse("completed", openaiReasoning+","+openaiMessage+","+openaiFnCall, openaiUsage)), responsesStream: openaiResponsesStream(),
		chat: []byte(openaiChatCompletion), chatStream: openaiChatStream(),
	}
}

func (t *openaiTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var req []byte
	if r.Body != nil {
		req, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	if t.record {
		t.body = req
	}
	stream := bytes.Contains(req, []byte(`"stream":true`))
	var body []byte
	switch {
	case strings.HasSuffix(r.URL.Path, "/responses") && stream:
		body = t.responsesStream
	case strings.HasSuffix(r.URL.Path, "/responses"):
		body = t.responses
	case strings.HasSuffix(r.URL.Path, "/chat/completions") && stream:
		body = t.chatStream
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		body = t.chat
	default:
		return &http.Response{StatusCode: 404, Status: "404 Not Found", Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	}
	ct := "application/json"
	if stream {
		ct = "text/event-stream"
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}, "X-Request-Id": {"req_bench"}}, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}, nil
}

func openaiClient(t http.RoundTripper) sdk.Client {
	return sdk.NewClient(option.WithBaseURL("http://openai.invalid/v1/"), option.WithAPIKey("sk-bench"),
		option.WithHTTPClient(&http.Client{Transport: t}), option.WithMaxRetries(0))
}

// openaiModel returns the adapter for api over client.
func openaiModel(api string, client sdk.Client) pipeline.Model {
	if api == "chat" {
		return openai.NewChat(client)
	}
	return openai.New(client)
}

// openaiCall is the adapter's call for n items of history.
func openaiCall(api string, n int, stream bool) *pipeline.ModelCall {
	model := "gpt-5-mini"
	if api == "chat" {
		model = "gpt-4o-mini"
	}
	return &pipeline.ModelCall{
		Agent: &pipeline.Agent{Name: "weather"}, Instructions: openaiInstructions,
		Input: state.ItemsOf(openaiHistory(n)), Tools: openaiTools, Stream: stream,
		Settings: pipeline.ModelSettings{Model: model},
	}
}

// openaiAdapterBody returns the request body the adapter sends for call.
func openaiAdapterBody(t testing.TB, api string, call *pipeline.ModelCall) []byte {
	rec := newOpenAITransport()
	rec.record = true
	if _, err := openaiModel(api, openaiClient(rec)).Respond(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	return rec.body
}

// openaiSDKCall returns the client call the adapter makes, alone: the
// params it builds (taken from its request body: the same raw JSON pieces
// set with param.Override, or the whole body for Chat Completions) built
// once, sent with the same options.
func openaiSDKCall(t testing.TB, client sdk.Client, api string, body []byte, stream bool) func() error {
	var top struct {
		Model        string
		Instructions string
		Input        json.RawMessage
		Tools        []json.RawMessage
	}
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if api == "chat" {
		// The Chat Completions adapter sets its whole body (without the
		// stream member, which a streamed call adds with WithJSONSet).
		raw := bytes.Clone(body)
		if rest, ok := bytes.CutSuffix(raw, []byte(`,"stream":true}`)); ok {
			raw = append(rest, '}')
		}
		var p sdk.ChatCompletionNewParams
		param.SetJSON(raw, &p)
		if stream {
			return func() error {
				var res *http.Response
				if _, err := client.Chat.Completions.New(ctx, p, option.WithJSONSet("stream", true), option.WithResponseBodyInto(&res)); err != nil {
					return err
				}
				return drainEvents(res)
			}
		}
		return func() error {
			var (
				out []byte
				res *http.Response
			)
			_, err := client.Chat.Completions.New(ctx, p, option.WithResponseInto(&res), option.WithResponseBodyInto(&out))
			return err
		}
	}
	p := responses.ResponseNewParams{Model: top.Model, Instructions: param.NewOpt(top.Instructions),
		Input: param.Override[responses.ResponseNewParamsInputUnion](top.Input)}
	for _, tool := range top.Tools {
		p.Tools = append(p.Tools, param.Override[responses.ToolUnionParam](tool))
	}
	if stream {
		return func() error {
			var res *http.Response
			if _, err := client.Responses.New(ctx, p, option.WithJSONSet("stream", true), option.WithResponseBodyInto(&res)); err != nil {
				return err
			}
			return drainEvents(res)
		}
	}
	return func() error {
		var (
			out []byte
			res *http.Response
		)
		_, err := client.Responses.New(ctx, p, option.WithResponseInto(&res), option.WithResponseBodyInto(&out))
		return err
	}
}

// drainEvents splits a stream's events with the SDK's decoder, as the
// adapters do, decoding none of them.
func drainEvents(res *http.Response) error {
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	for dec.Next() {
	}
	return dec.Err()
}

// openaiTypedCall returns the same call made the way a program using
// openai-go alone makes it, its typed params built once from history;
// got receives what it read: the answer's text and the call's name and
// arguments.
func openaiTypedCall(client sdk.Client, api string, history []state.Item, stream bool, got func(text, name, args string)) func() error {
	ctx := context.Background()
	if got == nil {
		got = func(string, string, string) {}
	}
	if api == "chat" {
		p := openaiChatParams(history)
		if stream {
			p.StreamOptions.IncludeUsage = param.NewOpt(true)
			return func() error {
				s := client.Chat.Completions.NewStreaming(ctx, p)
				var acc sdk.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				if err := s.Close(); err != nil {
					return err
				}
				if s.Err() != nil {
					return s.Err()
				}
				if len(acc.Choices) > 0 && len(acc.Choices[0].Message.ToolCalls) > 0 {
					tc := acc.Choices[0].Message.ToolCalls[0]
					got(acc.Choices[0].Message.Content, tc.Function.Name, tc.Function.Arguments)
				}
				return nil
			}
		}
		return func() error {
			cc, err := client.Chat.Completions.New(ctx, p)
			if err != nil {
				return err
			}
			if len(cc.Choices) > 0 && len(cc.Choices[0].Message.ToolCalls) > 0 {
				tc := cc.Choices[0].Message.ToolCalls[0]
				got(cc.Choices[0].Message.Content, tc.Function.Name, tc.Function.Arguments)
			}
			return nil
		}
	}
	p := openaiResponsesParams(history)
	read := func(r *responses.Response) {
		var text, name, args string
		for _, o := range r.Output {
			switch o.Type {
			case "message":
				for _, c := range o.Content {
					text += c.Text
				}
			case "function_call":
				name, args = o.Name, o.Arguments.OfString
			}
		}
		got(text, name, args)
	}
	if stream {
		return func() error {
			s := client.Responses.NewStreaming(ctx, p)
			var text strings.Builder
			for s.Next() {
				ev := s.Current()
				switch ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					read(&ev.Response)
				}
			}
			if err := s.Close(); err != nil {
				return err
			}
			return s.Err()
		}
	}
	return func() error {
		r, err := client.Responses.New(ctx, p)
		if err != nil {
			return err
		}
		read(r)
		return nil
	}
}

// openaiSchema decodes a tool's parameters for the SDK's typed params.
func openaiSchema(t pipeline.ToolSpec) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(t.Parameters, &m)
	return m
}

// itemID returns the id member of an item's JSON.
func itemID(it state.Item) string {
	var v struct{ ID string }
	_ = json.Unmarshal(it.Raw(), &v)
	return v.ID
}

// openaiResponsesParams builds, with openai-go's own types, the request
// the Responses adapter builds from history.
func openaiResponsesParams(history []state.Item) responses.ResponseNewParams {
	input := make(responses.ResponseInputParam, 0, len(history))
	for _, it := range history {
		var u responses.ResponseInputItemUnionParam
		switch it.Kind() {
		case state.KindUserMessage:
			u.OfMessage = &responses.EasyInputMessageParam{Type: "message", Role: "user",
				Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(it.Text())}}
		case state.KindToolCall:
			u.OfFunctionCall = &responses.ResponseFunctionToolCallParam{ID: param.NewOpt(itemID(it)), CallID: it.CallID(),
				Name: it.Name(), Arguments: it.Text(), Status: "completed"}
		case state.KindToolOutput:
			u.OfFunctionCallOutput = &responses.ResponseInputItemFunctionCallOutputParam{CallID: param.NewOpt(it.CallID()),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(it.Text())}}
		case state.KindAssistantMessage:
			u.OfOutputMessage = &responses.ResponseOutputMessageParam{ID: itemID(it), Status: "completed",
				Content: []responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{
					Text: it.Text(), Annotations: []responses.ResponseOutputTextAnnotationUnionParam{}}}}}
		}
		input = append(input, u)
	}
	tools := make([]responses.ToolUnionParam, len(openaiTools))
	for i, t := range openaiTools {
		tools[i] = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: t.Name,
			Description: param.NewOpt(t.Description), Parameters: openaiSchema(t), Strict: param.NewOpt(t.Strict)}}
	}
	return responses.ResponseNewParams{Model: "gpt-5-mini", Instructions: param.NewOpt(openaiInstructions),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: tools}
}

// openaiChatParams builds, with openai-go's own types, the request the
// Chat Completions adapter builds from history: an assistant message
// carries the calls that follow it.
func openaiChatParams(history []state.Item) sdk.ChatCompletionNewParams {
	msgs := []sdk.ChatCompletionMessageParamUnion{sdk.SystemMessage(openaiInstructions)}
	var assistant *sdk.ChatCompletionAssistantMessageParam
	for _, it := range history {
		switch it.Kind() {
		case state.KindUserMessage:
			assistant = nil
			msgs = append(msgs, sdk.UserMessage(it.Text()))
		case state.KindToolCall:
			if assistant == nil {
				msgs = append(msgs, sdk.ChatCompletionMessageParamUnion{OfAssistant: &sdk.ChatCompletionAssistantMessageParam{}})
				assistant = msgs[len(msgs)-1].OfAssistant
			}
			assistant.ToolCalls = append(assistant.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{ID: it.CallID(),
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: it.Name(), Arguments: it.Text()}}})
		case state.KindToolOutput:
			assistant = nil
			msgs = append(msgs, sdk.ToolMessage(it.Text(), it.CallID()))
		case state.KindAssistantMessage:
			msgs = append(msgs, sdk.AssistantMessage(it.Text()))
			assistant = msgs[len(msgs)-1].OfAssistant
		}
	}
	tools := make([]sdk.ChatCompletionToolUnionParam, len(openaiTools))
	for i, t := range openaiTools {
		tools[i] = sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: t.Name,
			Description: param.NewOpt(t.Description), Parameters: openaiSchema(t), Strict: param.NewOpt(t.Strict)})
	}
	return sdk.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs, Tools: tools}
}

// BenchmarkOpenAI reports, per API, mode and history, the adapter's
// Respond, the client call it makes alone (sdk) and the same call made
// with openai-go alone (sdk-typed).
func BenchmarkOpenAI(b *testing.B) {
	client := openaiClient(newOpenAITransport())
	for _, api := range []string{"responses", "chat"} {
		m := openaiModel(api, client)
		for _, stream := range []bool{false, true} {
			mode := "plain"
			if stream {
				mode = "stream"
			}
			for _, n := range []int{10, 100} {
				call := openaiCall(api, n, stream)
				sdkCall := openaiSDKCall(b, client, api, openaiAdapterBody(b, api, call), stream)
				typedCall := openaiTypedCall(client, api, openaiHistory(n), stream, nil)
				key := fmt.Sprintf("%s/%s/items=%d/", api, mode, n)
				b.Run(key+"sdk-typed", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if err := typedCall(); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run(key+"sdk", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if err := sdkCall(); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run(key+"adapter", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := m.Respond(context.Background(), call); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestOpenAIRequests checks that BenchmarkOpenAI's three rows make the
// same call: the sdk row sends the adapter's body byte for byte, the
// sdk-typed row the same JSON (once members the typed params leave out
// as null are dropped), and the adapter and the typed call read the same
// answer from the recorded response.
func TestOpenAIRequests(t *testing.T) {
	for _, api := range []string{"responses", "chat"} {
		for _, stream := range []bool{false, true} {
			for _, n := range []int{10, 100} {
				name := fmt.Sprintf("%s/stream=%v/items=%d", api, stream, n)
				call := openaiCall(api, n, stream)
				want := openaiAdapterBody(t, api, call)

				rec := newOpenAITransport()
				rec.record = true
				client := openaiClient(rec)
				if err := openaiSDKCall(t, client, api, want, stream)(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(rec.body, want) {
					t.Errorf("%s: the sdk row sends\n%s\nthe adapter sends\n%s", name, rec.body, want)
				}

				var text, fn, args string
				if err := openaiTypedCall(client, api, openaiHistory(n), stream, func(x, y, z string) { text, fn, args = x, y, z })(); err != nil {
					t.Fatal(err)
				}
				if g, w := normalJSON(t, rec.body), normalJSON(t, want); !reflect.DeepEqual(g, w) {
					gb, _ := json.Marshal(g)
					wb, _ := json.Marshal(w)
					t.Errorf("%s: the typed call sends\n%s\nthe adapter sends\n%s", name, gb, wb)
				}
				if text != openaiText || fn != "get_forecast" || args != openaiArgs {
					t.Errorf("%s: the typed call read %q, %q(%s)", name, text, fn, args)
				}

				res, err := openaiModel(api, openaiClient(newOpenAITransport())).Respond(context.Background(), call)
				if err != nil {
					t.Fatal(err)
				}
				var gotText, gotName, gotArgs string
				for _, it := range res.Items {
					switch it.Kind() {
					case state.KindAssistantMessage:
						gotText = it.Text()
					case state.KindToolCall:
						gotName, gotArgs = it.Name(), it.Text()
					}
				}
				if gotText != openaiText || gotName != "get_forecast" || gotArgs != openaiArgs || res.Usage.InputTokens != 1472 {
					t.Errorf("%s: the adapter read %q, %q(%s), usage %+v", name, gotText, gotName, gotArgs, res.Usage)
				}
			}
		}
	}
}

// normalJSON decodes a request body with its null members dropped.
func normalJSON(t *testing.T, body []byte) any {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var drop func(v any) any
	drop = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if e == nil {
					delete(x, k)
					continue
				}
				x[k] = drop(e)
			}
		case []any:
			for i, e := range x {
				x[i] = drop(e)
			}
		}
		return v
	}
	return drop(v)
}
