package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"
	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// itemView is what a test compares of an item.
type itemView struct {
	Kind   string
	CallID string
	Name   string
	Text   string
}

func views(items []state.Item) []itemView {
	out := make([]itemView, len(items))
	for i, it := range items {
		out[i] = itemView{Kind: it.Kind().String(), CallID: it.CallID(), Name: it.Name(), Text: it.Text()}
	}
	return out
}

func compact(t testing.TB, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("compact: %v", err)
	}
	return buf.String()
}

// outputOf returns the compacted output items of a testdata response.
func outputOf(t testing.TB, file string) []string {
	t.Helper()
	var r struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(readFile(t, file), &r); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(r.Output))
	for i, o := range r.Output {
		out[i] = compact(t, o)
	}
	return out
}

func call(stream bool) *pipeline.ModelCall {
	return &pipeline.ModelCall{
		Agent:    &pipeline.Agent{Name: "assistant"},
		Input:    state.ItemsOf(pipeline.UserInput("What is the weather in Paris?")),
		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
		Stream:   stream,
	}
}

var modes = []struct {
	name   string
	stream bool
}{{"plain", false}, {"stream", true}}

func TestRespondItems(t *testing.T) {
	tests := []struct {
		file  string
		want  []itemView
		usage state.Usage
	}{
		{
			file:  "responses_text.json",
			want:  []itemView{{Kind: "assistant_message", Text: "The weather in Paris is sunny, 22 degrees."}},
			usage: state.Usage{Requests: 1, InputTokens: 36, OutputTokens: 87},
		},
		{
			file: "responses_tool_call.json",
			want: []itemView{
				{Kind: "reasoning", Text: "The user wants the weather; call get_weather."},
				{Kind: "tool_call", CallID: "call_unLAR8MvFNptuiZK6K6HCy5k", Name: "get_weather", Text: `{"location":"Paris, France"}`},
			},
			usage: state.Usage{Requests: 1, InputTokens: 291, OutputTokens: 23, ReasoningTokens: 12, CachedTokens: 128},
		},
		{
			file: "responses_handoff.json",
			want: []itemView{
				{Kind: "assistant_message", Text: "Let me pass you to billing."},
				{Kind: "tool_call", CallID: "call_handoff_1", Name: "transfer_to_billing", Text: "{}"},
			},
			usage: state.Usage{Requests: 1, InputTokens: 50, OutputTokens: 20},
		},
		{
			file:  "responses_refusal.json",
			want:  []itemView{{Kind: "assistant_message", Text: "I'm sorry, I can't help with that."}},
			usage: state.Usage{Requests: 1, InputTokens: 20, OutputTokens: 10},
		},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.file+"/"+mode.name, func(t *testing.T) {
				srv := newServer(t, reply{file: tt.file})
				m := openai.New(srv.client(0))
				resp, err := m.Respond(context.Background(), call(mode.stream))
				if err != nil {
					t.Fatalf("Respond: %v", err)
				}
				if diff := cmp.Diff(tt.want, views(resp.Items)); diff != "" {
					t.Errorf("items (-want +got):\n%s", diff)
				}
				// Each item keeps the JSON the API sent, ids and encrypted
				// reasoning included.
				raws := outputOf(t, tt.file)
				for i, it := range resp.Items {
					if got := string(it.Raw()); got != raws[i] {
						t.Errorf("item %d raw:\n got %s\nwant %s", i, got, raws[i])
					}
				}
				if diff := cmp.Diff(tt.usage, resp.Usage); diff != "" {
					t.Errorf("usage (-want +got):\n%s", diff)
				}
				if resp.ID == "" || resp.Model != "gpt-5-mini-2025-08-07" {
					t.Errorf("ID %q, Model %q", resp.ID, resp.Model)
				}
			})
		}
	}
}

func TestRespondHandWrittenStream(t *testing.T) {
	srv := newServer(t, reply{file: "stream_text.sse"})
	resp, err := openai.New(srv.client(0)).Respond(context.Background(), call(true))
	if err != nil {
		t.Fatal(err)
	}
	want := []itemView{{Kind: "assistant_message", Text: "Hi there!"}}
	if diff := cmp.Diff(want, views(resp.Items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if resp.ID != "resp_stream_1" || resp.Usage.InputTokens != 37 || resp.Usage.OutputTokens != 11 {
		t.Errorf("got ID %q usage %+v", resp.ID, resp.Usage)
	}
}

func TestRespondNoModelName(t *testing.T) {
	srv := newServer(t)
	c := call(false)
	c.Settings.Model = ""
	_, err := openai.New(srv.client(0)).Respond(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "no model name") {
		t.Fatalf("err = %v, want a missing model name error", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("sent %d requests", n)
	}
	// WithModel supplies the default.
	srv = newServer(t, reply{file: "responses_text.json"})
	if _, err := openai.New(srv.client(0), openai.WithModel("gpt-5-nano")).Respond(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	var body struct{ Model string }
	_ = json.Unmarshal(srv.Requests()[0].body, &body)
	if body.Model != "gpt-5-nano" {
		t.Errorf("model %q, want gpt-5-nano", body.Model)
	}
}

// goldenOptions are the Responses API's own settings the goldens send,
// beside goldenCall's; chatGoldenOptions those Chat Completions takes.
var (
	goldenOptions = []openai.Option{
		openai.WithInclude("reasoning.encrypted_content"), openai.WithReasoningSummary("auto"),
		openai.WithTruncation("auto"), openai.WithStore(true),
	}
	chatGoldenOptions = []openai.Option{openai.WithStore(true)}
)

// goldenCall is a call that uses every kind of input item, both kinds of
// tool and every setting.
func goldenCall(t testing.TB, stream bool) *pipeline.ModelCall {
	reasoning, err := state.ParseItem(state.KindReasoning, []byte(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Think."}],"encrypted_content":"gAAAA=="}`))
	if err != nil {
		t.Fatal(err)
	}
	handoffCall, _ := state.ToolCall("fc_2", "call_2", "transfer_to_billing", "{}").WithKind(state.KindHandoffCall)
	handoffOut, _ := state.ToolOutput("call_2", "transfer_to_billing", `{"assistant":"billing"}`).WithKind(state.KindHandoffOutput)
	items := []state.Item{
		state.SystemMessage("Be brief."),
		state.UserMessage("Weather in \"Paris\"? <b>& ünïcode</b>"),
		reasoning,
		state.AssistantMessage("msg_1", "Let me check."),
		state.ToolCall("fc_1", "call_1", "get_weather", `{"location":"Paris"}`),
		state.ToolOutput("call_1", "get_weather", "22C, sunny"),
		handoffCall,
		handoffOut,
	}
	temp, topP, maxTok, par := 0.2, 0.9, int64(512), false
	return &pipeline.ModelCall{
		Agent:        &pipeline.Agent{Name: "assistant"},
		Instructions: "You are a helpful assistant.",
		Input:        state.ItemsOf(items),
		Tools: []pipeline.ToolSpec{
			{
				Name: "get_weather", Description: "Get the weather for a location.", Strict: true,
				Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}`),
			},
			{
				Name: pipeline.HandoffToolName("billing"), Description: "Handoff to the billing agent to handle the request.", Strict: true,
				Parameters: json.RawMessage(`{"type":"object","properties":{},"required":[],"additionalProperties":false}`),
			},
			{Name: "lenient", Description: "A tool without a schema."},
		},
		Settings: pipeline.ModelSettings{
			Model: "gpt-5-mini", Temperature: &temp, TopP: &topP, MaxOutputTokens: &maxTok,
			ToolChoice: "get_weather", ParallelToolCalls: &par, ReasoningEffort: "low",
			Metadata: map[string]string{"run": "r1"},
		},
		Stream: stream,
	}
}

// checkGolden compares the request body with testdata/golden/name,
// indented as sent (keys keep their order).
func checkGolden(t *testing.T, name string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, body)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("request body differs from %s (-want +got):\n%s", path, diff)
	}
}

func TestRequestGolden(t *testing.T) {
	for _, mode := range modes {
		t.Run("responses/"+mode.name, func(t *testing.T) {
			file := "responses_text.json"
			srv := newServer(t, reply{file: file})
			c := goldenCall(t, mode.stream)
			m := openai.New(srv.client(0), goldenOptions...)
			if _, err := m.Respond(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].path != "/v1/responses" {
				t.Fatalf("requests %+v", reqs)
			}
			checkGolden(t, "responses_request_"+mode.name+".json", reqs[0].body)

			// The input is the items' canonical JSON, byte for byte.
			var body map[string]json.RawMessage
			if err := json.Unmarshal(reqs[0].body, &body); err != nil {
				t.Fatal(err)
			}
			want := []byte{'['}
			for i, it := range c.Input.All() {
				if i > 0 {
					want = append(want, ',')
				}
				want = it.AppendRaw(want)
			}
			want = append(want, ']')
			if !bytes.Equal(body["input"], want) {
				t.Errorf("input is not the items' JSON:\n got %s\nwant %s", body["input"], want)
			}
		})
		t.Run("chat/"+mode.name, func(t *testing.T) {
			srv := newServer(t, reply{file: "chat_text.json"})
			if _, err := openai.NewChat(srv.client(0), chatGoldenOptions...).Respond(context.Background(), goldenCall(t, mode.stream)); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].path != "/v1/chat/completions" {
				t.Fatalf("requests %+v", reqs)
			}
			checkGolden(t, "chat_request_"+mode.name+".json", reqs[0].body)
		})
	}
}

func TestChatItems(t *testing.T) {
	tests := []struct {
		file  string
		want  []itemView
		usage state.Usage
	}{
		{
			file:  "chat_text.json",
			want:  []itemView{{Kind: "assistant_message", Text: "The weather in Paris is sunny, 22 degrees."}},
			usage: state.Usage{Requests: 1, InputTokens: 19, OutputTokens: 10},
		},
		{
			file:  "chat_tool_call.json",
			want:  []itemView{{Kind: "tool_call", CallID: "call_abc123", Name: "get_weather", Text: `{"location":"Paris, France"}`}},
			usage: state.Usage{Requests: 1, InputTokens: 82, OutputTokens: 17, CachedTokens: 64, ReasoningTokens: 5},
		},
		{
			file:  "chat_refusal.json",
			want:  []itemView{{Kind: "assistant_message", Text: "I'm sorry, I can't help with that."}},
			usage: state.Usage{Requests: 1, InputTokens: 10, OutputTokens: 9},
		},
		{
			file: "chat_stream_tool_call.sse",
			want: []itemView{
				{Kind: "assistant_message", Text: "Checking now."},
				{Kind: "tool_call", CallID: "call_s1", Name: "get_weather", Text: `{"location":"Paris"}`},
			},
			usage: state.Usage{Requests: 1, InputTokens: 40, OutputTokens: 12},
		},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			if strings.HasSuffix(tt.file, ".sse") && !mode.stream {
				continue
			}
			t.Run(tt.file+"/"+mode.name, func(t *testing.T) {
				srv := newServer(t, reply{file: tt.file})
				resp, err := openai.NewChat(srv.client(0)).Respond(context.Background(), call(mode.stream))
				if err != nil {
					t.Fatalf("Respond: %v", err)
				}
				if diff := cmp.Diff(tt.want, views(resp.Items)); diff != "" {
					t.Errorf("items (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.usage, resp.Usage); diff != "" {
					t.Errorf("usage (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestErrors(t *testing.T) {
	rateLimited := reply{status: http.StatusTooManyRequests, file: "error_429.json", header: map[string]string{"retry-after-ms": "1"}}
	tests := []struct {
		name     string
		chat     bool
		stream   bool
		retries  int
		replies  []reply
		requests int
		// want is nil for success.
		want      *pipeline.ModelError
		sentinel  error
		sdkError  bool
		wantText  string
		wantCause any
	}{
		{name: "429 then success", retries: 2, replies: []reply{rateLimited, {file: "responses_text.json"}}, requests: 2},
		{name: "429 then success/stream", stream: true, retries: 2, replies: []reply{rateLimited, {file: "responses_text.json"}}, requests: 2},
		{name: "429 then success/chat", chat: true, retries: 2, replies: []reply{rateLimited, {file: "chat_text.json"}}, requests: 2},
		{
			name: "429 retries used up", retries: 1, replies: []reply{rateLimited, rateLimited}, requests: 2,
			want: &pipeline.ModelError{Status: 429, Retryable: true, RequestID: "req_2", Code: "rate_limit_exceeded", RetryAfter: time.Millisecond}, sdkError: true,
		},
		{
			name: "429 with Retry-After in seconds", replies: []reply{{status: http.StatusTooManyRequests, file: "error_429.json", header: map[string]string{"retry-after": "2"}}}, requests: 1,
			want: &pipeline.ModelError{Status: 429, Retryable: true, RequestID: "req_1", Code: "rate_limit_exceeded", RetryAfter: 2 * time.Second}, sdkError: true,
		},
		{
			name: "400", retries: 2, replies: []reply{{status: 400, file: "error_400.json"}}, requests: 1,
			want: &pipeline.ModelError{Status: 400, RequestID: "req_1", Code: "invalid_value"}, sdkError: true,
			wantText: "Invalid value for 'temperature'",
		},
		{
			name: "400/stream", stream: true, replies: []reply{{status: 400, file: "error_400.json"}}, requests: 1,
			want: &pipeline.ModelError{Status: 400, RequestID: "req_1", Code: "invalid_value"}, sdkError: true,
		},
		{
			name: "400/chat", chat: true, replies: []reply{{status: 400, file: "error_400.json"}}, requests: 1,
			want: &pipeline.ModelError{Status: 400, RequestID: "req_1", Code: "invalid_value"}, sdkError: true,
		},
		{
			name: "500", replies: []reply{{status: 500, file: "error_500.json"}}, requests: 1,
			want: &pipeline.ModelError{Status: 500, Retryable: true, RequestID: "req_1", Code: "server_error"}, sdkError: true,
		},
		{
			name: "500 retried", retries: 1, replies: []reply{{status: 500, file: "error_500.json"}, {status: 500, file: "error_500.json"}}, requests: 2,
			want: &pipeline.ModelError{Status: 500, Retryable: true, RequestID: "req_2", Code: "server_error"}, sdkError: true,
		},
		{
			name: "malformed JSON", replies: []reply{{file: "malformed.json"}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, RequestID: "req_1"}, sentinel: openai.ErrMalformedResponse, wantCause: new(*openai.DecodeError),
		},
		{
			name: "malformed JSON/chat", chat: true, replies: []reply{{file: "malformed.json"}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, RequestID: "req_1"}, sentinel: openai.ErrMalformedResponse,
		},
		{
			name: "failed response", replies: []reply{{file: "responses_failed.json"}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, Retryable: true, RequestID: "req_1", Code: "server_error"}, sentinel: openai.ErrResponseFailed,
			wantCause: new(*openai.FailedError),
		},
		{
			name: "unsupported output item", replies: []reply{{file: "responses_usermessage.json"}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, RequestID: "req_1"}, sentinel: openai.ErrUnsupportedItem, wantText: `output[0]`,
		},
		{
			name: "stream ends early", stream: true, replies: []reply{{file: "stream_cut.sse"}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, Retryable: true, RequestID: "req_1"}, sentinel: openai.ErrIncompleteStream,
		},
		{
			name: "stream connection cut", stream: true, replies: []reply{{file: "stream_cut.sse", cut: true}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, Retryable: true, RequestID: "req_1"}, sentinel: openai.ErrIncompleteStream,
		},
		{
			name: "stream error event", stream: true, replies: []reply{{file: "stream_error.sse"}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, Retryable: true, RequestID: "req_1", Code: "server_error"}, sentinel: openai.ErrResponseFailed,
		},
		{
			name: "stream response.failed", stream: true, replies: []reply{{file: "stream_failed.sse"}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, RequestID: "req_1", Code: "invalid_prompt"}, sentinel: openai.ErrResponseFailed,
		},
		{
			name: "chat stream cut", chat: true, stream: true, replies: []reply{{file: "chat_stream_cut.sse", cut: true}}, requests: 1,
			want: &pipeline.ModelError{Status: 200, Retryable: true, RequestID: "req_1"}, sentinel: openai.ErrIncompleteStream,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.replies...)
			var m pipeline.Model = openai.New(srv.client(tt.retries))
			if tt.chat {
				m = openai.NewChat(srv.client(tt.retries))
			}
			resp, err := m.Respond(context.Background(), call(tt.stream))
			if got := len(srv.Requests()); got != tt.requests {
				t.Errorf("server got %d requests, want %d", got, tt.requests)
			}
			if tt.want == nil {
				if err != nil || resp == nil || len(resp.Items) == 0 {
					t.Fatalf("Respond = %v, %v; want a response", resp, err)
				}
				return
			}
			if resp != nil {
				t.Errorf("response %v with error", resp)
			}
			me, ok := errors.AsType[*pipeline.ModelError](err)
			if !ok {
				t.Fatalf("err = %T %v, want *pipeline.ModelError", err, err)
			}
			got := pipeline.ModelError{Status: me.Status, Retryable: me.Retryable, RequestID: me.RequestID, Code: me.Code, RetryAfter: me.RetryAfter}
			want := *tt.want
			want.Err = nil
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("ModelError (-want +got):\n%s\nerr: %v", diff, err)
			}
			if tt.sdkError {
				if _, ok := errors.AsType[*sdk.Error](err); !ok {
					t.Errorf("err %v does not wrap *openai.Error", err)
				}
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("err %v is not %v", err, tt.sentinel)
			}
			if tt.wantText != "" && !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err %q does not say %q", err, tt.wantText)
			}
			if tt.wantCause != nil && !errors.As(err, tt.wantCause) {
				t.Errorf("err %v does not wrap %T", err, tt.wantCause)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	for _, api := range []string{"responses", "chat"} {
		for _, mode := range modes {
			t.Run(api+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				rp := reply{file: "empty.txt", hang: true}
				srv := newServer(t, rp)
				var m pipeline.Model = openai.New(srv.client(2))
				if api == "chat" {
					m = openai.NewChat(srv.client(2))
				}
				// The deadline leaves a loaded machine time to deliver the
				// request before it expires (100 ms once flaked under -race).
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_, err := m.Respond(ctx, call(mode.stream))
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err = %v, want context.DeadlineExceeded", err)
				}
				if _, ok := errors.AsType[*pipeline.ModelError](err); ok {
					t.Errorf("a context error became a ModelError: %v", err)
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%d requests: a cancelled call must not be retried", n)
				}
			})
		}
	}
}

// TestChatRefusesResponsesSettings: a Responses API option given to
// NewChat fails every call with ErrUnsupportedSetting, before any request,
// rather than being left out.
func TestChatRefusesResponsesSettings(t *testing.T) {
	for name, opt := range map[string]openai.Option{
		"WithTruncation":       openai.WithTruncation("auto"),
		"WithReasoningSummary": openai.WithReasoningSummary("auto"),
		"WithInclude":          openai.WithInclude("reasoning.encrypted_content"),
		"WithHostedToolSearch": openai.WithHostedToolSearch(),
	} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, reply{file: "chat_text.json"})
			_, err := openai.NewChat(srv.client(0), opt).Respond(context.Background(), goldenCall(t, false))
			if !errors.Is(err, openai.ErrUnsupportedSetting) || !strings.Contains(err.Error(), name) {
				t.Fatalf("Respond = %v, want ErrUnsupportedSetting naming %s", err, name)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests, want none", n)
			}
		})
	}
}

// TestRequestSettingsOnTheWire checks, by hand beside the goldens (which
// -update rewrites from the code under test), how goldenCall's settings
// map to each API's request: the field names and shapes the APIs document,
// not whatever the encoder produced.
func TestRequestSettingsOnTheWire(t *testing.T) {
	strictTool := func(chat bool, strict any) map[string]any {
		fn := map[string]any{
			"name": "get_weather", "description": "Get the weather for a location.", "strict": strict,
			"parameters": map[string]any{
				"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}},
				"required": []any{"location"}, "additionalProperties": false,
			},
		}
		if chat {
			return map[string]any{"type": "function", "function": fn}
		}
		fn["type"] = "function"
		return fn
	}
	for _, mode := range modes {
		t.Run("responses/"+mode.name, func(t *testing.T) {
			srv := newServer(t, reply{file: "responses_text.json"})
			m := openai.New(srv.client(0), goldenOptions...)
			if _, err := m.Respond(context.Background(), goldenCall(t, mode.stream)); err != nil {
				t.Fatal(err)
			}
			body := requestBody(t, srv)
			want := map[string]any{
				"model":               "gpt-5-mini",
				"instructions":        "You are a helpful assistant.",
				"temperature":         0.2,
				"top_p":               0.9,
				"max_output_tokens":   512.0,
				"parallel_tool_calls": false,
				"store":               true,
				"truncation":          "auto",
				"metadata":            map[string]any{"run": "r1"},
				"include":             []any{"reasoning.encrypted_content"},
				"reasoning":           map[string]any{"effort": "low", "summary": "auto"},
				"tool_choice":         map[string]any{"type": "function", "name": "get_weather"},
			}
			if mode.stream {
				want["stream"] = true
			}
			checkFields(t, body, want)
			tools, _ := body["tools"].([]any)
			if len(tools) != 3 {
				t.Fatalf("%d tools, want 3", len(tools))
			}
			if diff := cmp.Diff(strictTool(false, true), tools[0]); diff != "" {
				t.Errorf("the strict tool (-want +got):\n%s", diff)
			}
			if lenient, _ := tools[2].(map[string]any); lenient["name"] != "lenient" || lenient["strict"] != false {
				t.Errorf("the tool without a schema = %v, want name lenient, strict false", tools[2])
			}
			if _, ok := body["max_completion_tokens"]; ok {
				t.Error("a Responses request carries the Chat Completions max_completion_tokens")
			}
		})
		t.Run("chat/"+mode.name, func(t *testing.T) {
			srv := newServer(t, reply{file: "chat_text.json"})
			if _, err := openai.NewChat(srv.client(0), chatGoldenOptions...).Respond(context.Background(), goldenCall(t, mode.stream)); err != nil {
				t.Fatal(err)
			}
			body := requestBody(t, srv)
			want := map[string]any{
				"model":                 "gpt-5-mini",
				"temperature":           0.2,
				"top_p":                 0.9,
				"max_completion_tokens": 512.0,
				"parallel_tool_calls":   false,
				"store":                 true,
				"metadata":              map[string]any{"run": "r1"},
				"reasoning_effort":      "low",
				"tool_choice":           map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}},
			}
			if mode.stream {
				want["stream"] = true
				want["stream_options"] = map[string]any{"include_usage": true}
			}
			checkFields(t, body, want)
			for _, k := range []string{"max_tokens", "max_output_tokens", "reasoning", "instructions", "input"} {
				if _, ok := body[k]; ok {
					t.Errorf("a Chat Completions request carries %q", k)
				}
			}
			messages, _ := body["messages"].([]any)
			if first, _ := messages[0].(map[string]any); len(messages) == 0 || first["role"] != "system" || first["content"] != "You are a helpful assistant." {
				t.Errorf("first message = %v, want the instructions as a system message", messages)
			}
			tools, _ := body["tools"].([]any)
			if len(tools) != 3 {
				t.Fatalf("%d tools, want 3", len(tools))
			}
			if diff := cmp.Diff(strictTool(true, true), tools[0]); diff != "" {
				t.Errorf("the strict tool (-want +got):\n%s", diff)
			}
		})
	}
}

// requestBody decodes the one request srv received.
func requestBody(t *testing.T, srv *server) map[string]any {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].body, &body); err != nil {
		t.Fatalf("request body: %v\n%s", err, reqs[0].body)
	}
	return body
}

// checkFields compares the named fields of body with want; a field want
// holds must be present.
func checkFields(t *testing.T, body, want map[string]any) {
	t.Helper()
	for k, w := range want {
		got, ok := body[k]
		if !ok {
			t.Errorf("request has no %q, want %v", k, w)
			continue
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", k, diff)
		}
	}
	if _, ok := want["stream"]; !ok {
		if s, ok := body["stream"]; ok && s != false {
			t.Errorf("a plain request has stream %v", s)
		}
	}
}
