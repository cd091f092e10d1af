package gemini_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// One Model serves many calls at once (run with -race).
func TestConcurrentCalls(t *testing.T) {
	const n = 8
	replies := make([]reply, n)
	for i := range replies {
		replies[i] = reply{file: "by path"}
	}
	srv := newServer(t, replies...)
	m := gemini.New(srv.client(), gemini.WithSafetySettings(), gemini.WithHTTPOptions(genai.HTTPOptions{Headers: http.Header{"X-Team": {"weather"}}}))
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = m.Respond(context.Background(), &pipeline.ModelCall{
				Input: state.ItemsOf([]state.Item{state.UserMessage("hi")}), Stream: i%2 == 0,
				Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"},
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.got()); got != n {
		t.Errorf("%d requests, want %d", got, n)
	}
}

// A response cut at the token limit returns what the model produced.
func TestMaxTokens(t *testing.T) {
	srv := newServer(t, reply{body: `{"candidates":[{"content":{"parts":[{"text":"It is sunny in Par"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],
		"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash","responseId":"mAxToK01"}`})
	resp, err := call(t, gemini.New(srv.client()), false, state.UserMessage("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Text() != "It is sunny in Par" || resp.ID != "mAxToK01" {
		t.Errorf("response %+v, want the cut message", resp)
	}
}

// A signature no model part follows (the last item of the model's turn,
// as a stream's final empty text leaves it) goes back as a part of its
// own, before the user's next turn.
func TestTrailingSignature(t *testing.T) {
	srv := newServer(t, reply{body: `data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"c1","name":"f","args":{}}}],"role":"model"},"index":0}],"responseId":"r1"}` + "\r\n\r\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"dHJhaWxpbmc="}],"role":"model"},"finishReason":"STOP","index":0}],"responseId":"r1"}` + "\r\n\r\n"}, okReply)
	m := gemini.New(srv.client())
	resp, err := call(t, m, true, state.UserMessage("hi"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range resp.Items {
		kinds = append(kinds, it.Kind().String())
	}
	if diff := cmp.Diff([]string{"tool_call", "reasoning"}, kinds); diff != "" {
		t.Fatalf("items (-want +got):\n%s", diff)
	}
	input := append([]state.Item{state.UserMessage("hi")}, resp.Items...)
	input = append(input, state.ToolOutput("c1", "f", "done"))
	if _, err := call(t, m, false, input...); err != nil {
		t.Fatal(err)
	}
	want := jsonOf(t, `[
		{"role":"user","parts":[{"text":"hi"}]},
		{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f"}},{"thoughtSignature":"dHJhaWxpbmc="}]},
		{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"f","response":{"output":"done"}}}]}
	]`)
	if diff := cmp.Diff(want, srv.got()[1].Body["contents"]); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}
