package gemini_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/gemini"
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

func weatherAgent(m pipeline.Model) *pipeline.Agent {
	return &pipeline.Agent{
		Name: "forecaster", Instructions: "Answer weather questions.", Model: m,
		Tools: []pipeline.Tool{weather}, Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"},
	}
}

// jsonOf decodes a JSON text for comparison.
func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

// The parallel calls of one response, with the thought before them and the
// signature on the first, are recorded as items and sent back as the model
// sent them; both outputs answer in one user turn.
func TestRoundTripParallelCalls(t *testing.T) {
	srv := newServer(t, reply{file: "call.json"}, reply{file: "text.json"})
	out := runBoth(t, false, weatherAgent(gemini.New(srv.client())), "What is the weather in Paris and Tokyo?")

	if want := "It is sunny in Paris and in Tokyo."; out.final != want {
		t.Errorf("final output = %q, want %q", out.final, want)
	}
	reqs := srv.got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if want := "/v1beta/models/gemini-2.5-flash:generateContent"; reqs[0].Path != want {
		t.Errorf("path = %s, want %s", reqs[0].Path, want)
	}
	wantContents := jsonOf(t, `[
		{"role":"user","parts":[{"text":"What is the weather in Paris and Tokyo?"}]},
		{"role":"model","parts":[
			{"text":"The user wants the weather in two cities; I will call the tool twice.","thought":true},
			{"functionCall":{"name":"get_weather","args":{"location":"Paris"}},"thoughtSignature":"c2lnbmF0dXJlLW9mLXRoZS1jYWxscw=="},
			{"functionCall":{"name":"get_weather","args":{"location":"Tokyo"}}}
		]},
		{"role":"user","parts":[
			{"functionResponse":{"name":"get_weather","response":{"output":"sunny in Paris"}}},
			{"functionResponse":{"name":"get_weather","response":{"output":"sunny in Tokyo"}}}
		]}
	]`)
	if diff := cmp.Diff(wantContents, reqs[1].Body["contents"]); diff != "" {
		t.Errorf("second request's contents (-want +got):\n%s", diff)
	}
	wantSystem := jsonOf(t, `{"role":"user","parts":[{"text":"Answer weather questions."}]}`)
	if diff := cmp.Diff(wantSystem, reqs[0].Body["systemInstruction"]); diff != "" {
		t.Errorf("systemInstruction (-want +got):\n%s", diff)
	}
	wantTools := jsonOf(t, `[{"functionDeclarations":[{"name":"get_weather","description":"Get the weather for a location.",
		"parametersJsonSchema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}}]}]`)
	if diff := cmp.Diff(wantTools, reqs[0].Body["tools"]); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	kinds := make([]string, len(out.items))
	for i, it := range out.items {
		kinds[i] = it.Kind().String()
	}
	wantKinds := []string{"user_message", "reasoning", "reasoning", "tool_call", "tool_call", "tool_output", "tool_output", "reasoning", "assistant_message"}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("item kinds (-want +got):\n%s", diff)
	}
	if c1, c2 := out.items[3].CallID(), out.items[4].CallID(); c1 == c2 || c1 == "" {
		t.Errorf("call IDs %q and %q: want two distinct IDs", c1, c2)
	}
	if got, want := out.usage, (state.Usage{Requests: 2, InputTokens: 61 + 152, OutputTokens: 30 + 48 + 11, ReasoningTokens: 48, CachedTokens: 128}); got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
}

// A streamed run records the same items as a plain one, and its text
// deltas spell the final message.
func TestStreamEqualsPlain(t *testing.T) {
	plain := runBoth(t, false, weatherAgent(gemini.New(newServer(t, reply{file: "call.json"}, reply{file: "text.json"}).client())), "What is the weather in Paris and Tokyo?")
	srv := newServer(t, reply{file: "call.sse"}, reply{file: "text.sse"})
	streamed := runBoth(t, true, weatherAgent(gemini.New(srv.client())), "What is the weather in Paris and Tokyo?")

	if diff := cmp.Diff(plain.items, streamed.items, cmp.Comparer(state.Item.Equal)); diff != "" {
		t.Errorf("streamed items differ from plain ones (-plain +streamed):\n%s", diff)
	}
	if plain.usage != streamed.usage {
		t.Errorf("streamed usage %+v, plain %+v", streamed.usage, plain.usage)
	}
	if streamed.deltas != plain.final {
		t.Errorf("deltas = %q, want the final output %q", streamed.deltas, plain.final)
	}
	reqs := srv.got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if want := "/v1beta/models/gemini-2.5-flash:streamGenerateContent"; reqs[0].Path != want || reqs[0].Query != "alt=sse" {
		t.Errorf("stream request %s?%s, want %s?alt=sse", reqs[0].Path, reqs[0].Query, want)
	}
}

// runOutcome is what one run produced, in either mode.
type runOutcome struct {
	final  string
	items  []state.Item
	usage  state.Usage
	deltas string
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
