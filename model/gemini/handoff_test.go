package gemini_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A triage agent on OpenAI's Responses API hands off to a weather agent on
// Gemini, which calls a tool (its signature on the call) and answers. The
// Gemini requests carry the shared history, the handoff call and its
// output included, without OpenAI's reasoning; the second one replays
// Gemini's own signature; the run keeps both providers' reasoning, also
// through a checkpoint.
func TestHandoffFromOpenAI(t *testing.T) {
	var (
		mu     sync.Mutex
		oaSent int
	)
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		oaSent++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, readTestdata(t, "openai_handoff.json"))
	}))
	t.Cleanup(oa.Close)
	oaClient := openaisdk.NewClient(openaiopt.WithBaseURL(oa.URL+"/v1/"), openaiopt.WithAPIKey("sk-test"),
		openaiopt.WithHTTPClient(oa.Client()), openaiopt.WithMaxRetries(0))

	srv := newServer(t, reply{file: "call_ids.json"}, reply{file: "text.json"})
	triage := &pipeline.Agent{Name: "triage", Model: openai.New(oaClient, openai.WithModel("gpt-5-mini"))}
	forecaster := weatherAgent(gemini.New(srv.client()))
	triage.Handoffs = []pipeline.Handoff{{Agent: forecaster}}

	res, err := pipeline.NewRunner().Run(context.Background(), triage, pipeline.UserInput("Weather in Oslo?"))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.FinalOutput() != "It is sunny in Paris and in Tokyo." || res.LastAgent().Name != "forecaster" {
		t.Errorf("final output %q by %s", res.FinalOutput(), res.LastAgent().Name)
	}
	var kinds []string
	for _, it := range res.NewItems() {
		kinds = append(kinds, it.Kind().String())
	}
	wantKinds := []string{
		"user_message",
		"reasoning", "handoff_call", "handoff_output", // triage (OpenAI)
		"reasoning", "tool_call", "tool_output", // forecaster (Gemini): the call's signature
		"reasoning", "assistant_message", // the text's signature, the answer
	}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Fatalf("items (-want +got):\n%s", diff)
	}
	if oaSent != 1 {
		t.Errorf("%d OpenAI requests, want 1", oaSent)
	}

	reqs := srv.got()
	if len(reqs) != 2 {
		t.Fatalf("%d Gemini requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if strings.Contains(r.Raw, "encrypted_content") || strings.Contains(r.Raw, "openai_only") || strings.Contains(r.Raw, "weather agent answers") {
			t.Errorf("Gemini request %d carries OpenAI's reasoning: %s", i+1, r.Raw)
		}
	}
	want := jsonOf(t, `[
		{"role":"user","parts":[{"text":"Weather in Oslo?"}]},
		{"role":"model","parts":[{"functionCall":{"id":"call_Hq7Zk2LmN4pR6sT8vW0xY1aB","name":"transfer_to_forecaster"}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"call_Hq7Zk2LmN4pR6sT8vW0xY1aB","name":"transfer_to_forecaster","response":{"output":"{\"assistant\":\"forecaster\"}"}}}]},
		{"role":"model","parts":[{"functionCall":{"id":"fc-8f2a61","name":"get_weather","args":{"location":"Oslo"}},"thoughtSignature":"b3Nsby1zaWc="}]},
		{"role":"user","parts":[{"functionResponse":{"id":"fc-8f2a61","name":"get_weather","response":{"output":"sunny in Oslo"}}}]}
	]`)
	if diff := cmp.Diff(want, reqs[1].Body["contents"]); diff != "" {
		t.Errorf("second Gemini request's contents (-want +got):\n%s", diff)
	}

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
