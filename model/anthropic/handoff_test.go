package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/internal/providerfake"
	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// openaiFake answers Responses API requests with testdata files in order
// and records the request bodies.
func openaiFake(t *testing.T, files ...string) (openaisdk.Client, func() [][]byte) {
	t.Helper()
	srv := providerfake.New(t, "testdata", files...)
	client := openaisdk.NewClient(openaiopt.WithBaseURL(srv.URL+"/v1/"), openaiopt.WithAPIKey("sk-test"),
		openaiopt.WithHTTPClient(srv.Client()), openaiopt.WithMaxRetries(0))
	return client, srv.Bodies
}

// TestHandoffAcrossProviders: a triage agent on OpenAI's Responses API
// hands off to a weather agent on Anthropic, which thinks, calls a tool
// and hands back; triage answers. Each adapter sends the shared history,
// calls and outputs included, without the other provider's reasoning,
// and the run keeps every reasoning item of both.
func TestHandoffAcrossProviders(t *testing.T) {
	oaClient, oaSent := openaiFake(t, "openai_handoff.json", "openai_final.json")
	anSrv := newFakeServer(t, "thinking_tool_use.json", "handoff_back.json")

	triage := &pipeline.Agent{Name: "triage", Model: openai.New(oaClient, openai.WithModel("gpt-5-mini"))}
	weather := weatherAgent(anthropic.New(anSrv.client(), anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithThinking(2048)))
	triage.Handoffs = []pipeline.Handoff{{Agent: weather}}
	weather.Handoffs = []pipeline.Handoff{{Agent: triage}}

	res, err := pipeline.NewRunner().Run(context.Background(), triage, pipeline.UserInput("What is the weather in Paris?"))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.FinalOutput() != "Paris is sunny and 22C. Anything else?" || res.LastAgent().Name != "triage" {
		t.Errorf("final output %q by %s", res.FinalOutput(), res.LastAgent().Name)
	}
	var got []string
	for _, it := range res.NewItems() {
		got = append(got, it.Kind().String())
	}
	want := []string{
		"user_message",
		"reasoning", "handoff_call", "handoff_output", // triage (OpenAI)
		"reasoning", "reasoning", "assistant_message", "tool_call", "tool_output", // weather (Anthropic): thinking, redacted
		"reasoning", "handoff_call", "handoff_output", // weather hands back
		"assistant_message", // triage answers
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("items (-want +got):\n%s", diff)
	}

	// Anthropic's requests: the handoff call and its output as tool_use and
	// tool_result, no OpenAI reasoning.
	for i, body := range anSrv.bodies() {
		s := string(body)
		if strings.Contains(s, "encrypted_content") || strings.Contains(s, "rs_67ccd2bf") || strings.Contains(s, "hand off to the weather agent") {
			t.Errorf("Anthropic request %d carries OpenAI's reasoning: %s", i+1, s)
		}
		if !strings.Contains(s, `"type":"tool_use","id":"call_12xW9q8ZtN0pX3oK2f1Yh7Lc","name":"transfer_to_weather","input":{}`) ||
			!strings.Contains(s, `"type":"tool_result","tool_use_id":"call_12xW9q8ZtN0pX3oK2f1Yh7Lc"`) {
			t.Errorf("Anthropic request %d lacks the handoff call or its output: %s", i+1, s)
		}
	}
	// The second Anthropic request replays its own thinking.
	if s := string(anSrv.bodies()[1]); !strings.Contains(s, `"signature":"EqQBCgIYAhIM1gbc`) || !strings.Contains(s, `"type":"redacted_thinking"`) {
		t.Errorf("Anthropic's second request lacks its thinking blocks: %s", s)
	}

	// OpenAI's request after the handoff back: its own reasoning, all the
	// calls and outputs, no Anthropic thinking.
	sent := oaSent()
	if len(sent) != 2 {
		t.Fatalf("%d OpenAI requests, want 2", len(sent))
	}
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(sent[1], &req); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, in := range req.Input {
		var v struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		_ = json.Unmarshal(in, &v)
		types = append(types, v.Type+v.Role)
		if strings.Contains(string(in), `"anthropic":`) || strings.Contains(string(in), "signature") {
			t.Errorf("OpenAI request carries Anthropic's thinking: %s", in)
		}
	}
	wantTypes := []string{
		"messageuser", "reasoning", "function_call", "function_call_output",
		"messageassistant", "function_call", "function_call_output",
		"function_call", "function_call_output",
	}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("OpenAI input types (-want +got):\n%s", diff)
	}

	// The checkpoint keeps both providers' reasoning, byte for byte.
	b, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	back, err := state.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	items := back.Items().Slice()
	for i, it := range res.NewItems() {
		if !it.Equal(items[i]) {
			t.Errorf("item %d after a checkpoint round trip: %s, want %s", i, items[i].Raw(), it.Raw())
		}
	}
}
