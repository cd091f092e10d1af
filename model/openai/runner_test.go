package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

var weather = pipeline.NewTool(pipeline.ToolSpec{
	Name: "get_weather", Description: "Get the weather for a location.", Strict: true,
	Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}`),
}, func(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct{ Location string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	return "sunny in " + a.Location, nil
})

// newModel returns the adapter for api over the server.
func newModel(api string, srv *server) pipeline.Model {
	if api == "chat" {
		return openai.NewChat(srv.client(0))
	}
	return openai.New(srv.client(0))
}

// runOutcome is what one run produced, in either mode.
type runOutcome struct {
	final   string
	items   []state.Item
	usage   state.Usage
	deltas  string   // streamed text, concatenated
	created []string // ItemCreated events, in order
	agents  []string // AgentChanged events
}

func runBoth(t *testing.T, stream bool, agent *pipeline.Agent, input string) runOutcome {
	t.Helper()
	ctx := context.Background()
	runner := pipeline.NewRunner()
	var out runOutcome
	if !stream {
		res, err := runner.Run(ctx, agent, pipeline.UserInput(input))
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		out.final, out.items, out.usage = res.FinalOutput(), res.NewItems(), res.Usage()
		return out
	}
	var res *pipeline.Result
	for ev, err := range runner.Stream(ctx, agent, pipeline.UserInput(input)) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		switch ev := ev.(type) {
		case pipeline.TextDelta:
			out.deltas += ev.Delta
		case pipeline.ItemCreated:
			out.created = append(out.created, ev.Item.String())
		case pipeline.AgentChanged:
			out.agents = append(out.agents, ev.From+"→"+ev.To)
		case pipeline.RunCompleted:
			res = ev.Result
		}
	}
	if res == nil {
		t.Fatal("Stream ended without RunCompleted")
	}
	out.final, out.items, out.usage = res.FinalOutput(), res.NewItems(), res.Usage()
	return out
}

// TestRunner runs each scenario through pipeline.Runner in both modes, with
// the real client against the fake server, and checks that both modes
// record identical items.
func TestRunner(t *testing.T) {
	billing := &pipeline.Agent{Name: "billing", Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
	tests := []struct {
		name    string
		api     string
		replies []string
		handoff bool
		want    []itemView
		final   string
		usage   state.Usage
		// second lists the types (Responses) or roles (chat) of the
		// second request's input.
		second []string
	}{
		{
			name: "tool round trip", api: "responses",
			replies: []string{"responses_tool_call.json", "responses_final.json"},
			want: []itemView{
				{Kind: "user_message", Text: "weather?"},
				{Kind: "reasoning", Text: "The user wants the weather; call get_weather."},
				{Kind: "tool_call", CallID: "call_unLAR8MvFNptuiZK6K6HCy5k", Name: "get_weather", Text: `{"location":"Paris, France"}`},
				{Kind: "tool_output", CallID: "call_unLAR8MvFNptuiZK6K6HCy5k", Name: "get_weather", Text: "sunny in Paris, France"},
				{Kind: "assistant_message", Text: "It is sunny in Paris, 22 °C."},
			},
			final:  "It is sunny in Paris, 22 °C.",
			usage:  state.Usage{Requests: 2, InputTokens: 621, OutputTokens: 35, ReasoningTokens: 12, CachedTokens: 384},
			second: []string{"message", "reasoning", "function_call", "function_call_output"},
		},
		{
			name: "parallel calls", api: "responses",
			replies: []string{"responses_parallel.json", "responses_final.json"},
			want: []itemView{
				{Kind: "user_message", Text: "weather?"},
				{Kind: "tool_call", CallID: "call_p1", Name: "get_weather", Text: `{"location":"Paris"}`},
				{Kind: "tool_call", CallID: "call_p2", Name: "get_weather", Text: `{"location":"Tokyo"}`},
				{Kind: "tool_output", CallID: "call_p1", Name: "get_weather", Text: "sunny in Paris"},
				{Kind: "tool_output", CallID: "call_p2", Name: "get_weather", Text: "sunny in Tokyo"},
				{Kind: "assistant_message", Text: "It is sunny in Paris, 22 °C."},
			},
			final:  "It is sunny in Paris, 22 °C.",
			usage:  state.Usage{Requests: 2, InputTokens: 390, OutputTokens: 42, CachedTokens: 256},
			second: []string{"message", "function_call", "function_call", "function_call_output", "function_call_output"},
		},
		{
			name: "handoff", api: "responses", handoff: true,
			replies: []string{"responses_handoff.json", "responses_text.json"},
			want: []itemView{
				{Kind: "user_message", Text: "weather?"},
				{Kind: "assistant_message", Text: "Let me pass you to billing."},
				{Kind: "handoff_call", CallID: "call_handoff_1", Name: "transfer_to_billing", Text: "{}"},
				{Kind: "handoff_output", CallID: "call_handoff_1", Name: "transfer_to_billing", Text: `{"assistant":"billing"}`},
				{Kind: "assistant_message", Text: "The weather in Paris is sunny, 22 degrees."},
			},
			final:  "The weather in Paris is sunny, 22 degrees.",
			usage:  state.Usage{Requests: 2, InputTokens: 86, OutputTokens: 107},
			second: []string{"message", "message", "function_call", "function_call_output"},
		},
		{
			name: "refusal", api: "responses",
			replies: []string{"responses_refusal.json"},
			want: []itemView{
				{Kind: "user_message", Text: "weather?"},
				{Kind: "assistant_message", Text: "I'm sorry, I can't help with that."},
			},
			final: "I'm sorry, I can't help with that.",
			usage: state.Usage{Requests: 1, InputTokens: 20, OutputTokens: 10},
		},
		{
			name: "chat tool round trip", api: "chat",
			replies: []string{"chat_tool_call.json", "chat_final.json"},
			want: []itemView{
				{Kind: "user_message", Text: "weather?"},
				{Kind: "tool_call", CallID: "call_abc123", Name: "get_weather", Text: `{"location":"Paris, France"}`},
				{Kind: "tool_output", CallID: "call_abc123", Name: "get_weather", Text: "sunny in Paris, France"},
				{Kind: "assistant_message", Text: "It is sunny in Paris, 22 °C."},
			},
			final:  "It is sunny in Paris, 22 °C.",
			usage:  state.Usage{Requests: 2, InputTokens: 202, OutputTokens: 28, CachedTokens: 64, ReasoningTokens: 5},
			second: []string{"system", "user", "assistant", "tool"},
		},
		{
			name: "chat refusal", api: "chat",
			replies: []string{"chat_refusal.json"},
			want: []itemView{
				{Kind: "user_message", Text: "weather?"},
				{Kind: "assistant_message", Text: "I'm sorry, I can't help with that."},
			},
			final: "I'm sorry, I can't help with that.",
			usage: state.Usage{Requests: 1, InputTokens: 10, OutputTokens: 9},
		},
	}
	for _, tt := range tests {
		var got [2]runOutcome
		for i, mode := range modes {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				replies := make([]reply, len(tt.replies))
				for i, f := range tt.replies {
					replies[i] = reply{file: f}
				}
				srv := newServer(t, replies...)
				model := newModel(tt.api, srv)
				b := *billing
				b.Model = model
				agent := &pipeline.Agent{
					Name: "assistant", Instructions: "Answer weather questions.", Model: model,
					Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
					Tools:    []pipeline.Tool{weather},
				}
				if tt.handoff {
					agent.Handoffs = []pipeline.Handoff{{Agent: &b}}
				}
				out := runBoth(t, mode.stream, agent, "weather?")
				got[i] = out
				if diff := cmp.Diff(tt.want, views(out.items)); diff != "" {
					t.Errorf("items (-want +got):\n%s", diff)
				}
				if out.final != tt.final {
					t.Errorf("final output %q, want %q", out.final, tt.final)
				}
				if diff := cmp.Diff(tt.usage, out.usage); diff != "" {
					t.Errorf("usage (-want +got):\n%s", diff)
				}
				reqs := srv.Requests()
				if len(reqs) != len(tt.replies) {
					t.Fatalf("%d requests, want %d", len(reqs), len(tt.replies))
				}
				if tt.second != nil {
					if diff := cmp.Diff(tt.second, inputShape(t, tt.api, reqs[1].body)); diff != "" {
						t.Errorf("second request input (-want +got):\n%s", diff)
					}
				}
				if !mode.stream {
					return
				}
				var texts, created []string
				for _, it := range out.items {
					created = append(created, it.String())
					if it.Kind() == state.KindAssistantMessage {
						texts = append(texts, it.Text())
					}
				}
				if out.deltas != strings.Join(texts, "") {
					t.Errorf("streamed text %q, want the messages' text %q", out.deltas, strings.Join(texts, ""))
				}
				slices.Sort(created)
				slices.Sort(out.created)
				if diff := cmp.Diff(created, out.created); diff != "" {
					t.Errorf("ItemCreated events (-want +got):\n%s", diff)
				}
				if tt.handoff && !slices.Equal(out.agents, []string{"assistant→billing"}) {
					t.Errorf("AgentChanged events %v", out.agents)
				}
			})
		}
		t.Run(tt.name+"/same items in both modes", func(t *testing.T) {
			plain, streamed := got[0].items, got[1].items
			if len(plain) != len(streamed) {
				t.Fatalf("plain run has %d items, streamed run %d", len(plain), len(streamed))
			}
			for i := range plain {
				if !plain[i].Equal(streamed[i]) {
					t.Errorf("item %d differs:\nplain    %s %s\nstreamed %s %s", i, plain[i], plain[i].Raw(), streamed[i], streamed[i].Raw())
				}
			}
		})
	}
}

// inputShape lists the item types of a Responses request's input, or the
// roles of a chat request's messages.
func inputShape(t *testing.T, api string, body []byte) []string {
	t.Helper()
	var req struct {
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range req.Input {
		out = append(out, in.Type)
	}
	for _, m := range req.Messages {
		out = append(out, m.Role)
	}
	return out
}

// TestStreamConsumerStops breaks out of a stream at the first text delta,
// while the server still holds the connection: the run stops, no
// goroutine is left (goleak checks in TestMain), no model output is
// recorded, and the state resumes.
func TestStreamConsumerStops(t *testing.T) {
	for _, api := range []string{"responses", "chat"} {
		t.Run(api, func(t *testing.T) {
			first, next := "stream_cut.sse", "responses_text.json"
			if api == "chat" {
				first, next = "chat_stream_cut.sse", "chat_text.json"
			}
			srv := newServer(t, reply{file: first, hang: true}, reply{file: next})
			agent := &pipeline.Agent{Name: "assistant", Model: newModel(api, srv), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
			run := state.NewRun("run-1", "assistant")
			runner := pipeline.NewRunner()
			deltas := 0
			for ev, err := range runner.Stream(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithState(run)) {
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				if _, ok := ev.(pipeline.TextDelta); ok {
					deltas++
					break
				}
			}
			if deltas != 1 {
				t.Fatalf("saw %d deltas before stopping", deltas)
			}
			if n := run.Len(); n != 1 {
				t.Errorf("run has %d items after the consumer stopped, want the input only", n)
			}
			res, err := runner.Resume(context.Background(), agent, run)
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			if !strings.Contains(res.FinalOutput(), "sunny") {
				t.Errorf("final output %q", res.FinalOutput())
			}
		})
	}
}

// TestStreamCancel cancels the run's context mid-stream: the run returns
// the context's error, not a model error.
func TestStreamCancel(t *testing.T) {
	srv := newServer(t, reply{file: "stream_cut.sse", hang: true})
	agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(2)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	for ev, err := range pipeline.NewRunner().Stream(ctx, agent, pipeline.UserInput("hi")) {
		if _, ok := ev.(pipeline.TextDelta); ok {
			cancel()
		}
		last = err
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("stream ended with %v, want context.Canceled", last)
	}
	if _, ok := errors.AsType[*pipeline.ModelError](last); ok {
		t.Errorf("a context error became a ModelError: %v", last)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests; a cancelled stream must not be retried", n)
	}
}
