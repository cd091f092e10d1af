package gemini_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// FuzzInput sends any item that parses, after a user message, through the
// adapter: the call never panics, and fails only with a
// *pipeline.ModelError (an item refused is an *InputError inside it).
func FuzzInput(f *testing.F) {
	for _, seed := range []struct {
		kind state.Kind
		raw  string
	}{
		{state.KindReasoning, `{"type":"reasoning","summary":[],"gemini":{"thoughtSignature":"c2ln"}}`},
		{state.KindReasoning, `{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"gemini":{"thought":true}}`},
		{state.KindOpaque, `{"type":"gemini.executableCode","gemini":{"executableCode":{"language":"PYTHON","code":"print(1)"}}}`},
		{state.KindOpaque, `{"type":"anthropic.server_tool_use","anthropic":{"type":"server_tool_use","id":"s1"}}`},
		{state.KindToolCall, `{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}`},
		{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}]}`},
		{state.KindUserMessage, `{"type":"message","role":"user","content":[{"type":"input_file","file_url":"gs://b/o.pdf"}]}`},
		{state.KindAssistantMessage, `{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"no"}]}`},
	} {
		f.Add(uint8(seed.kind), seed.raw)
	}
	body := readTestdata(f, "text.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	f.Cleanup(srv.Close)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "fuzz", Backend: genai.BackendGeminiAPI, HTTPClient: srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		f.Fatal(err)
	}
	m := gemini.New(client, gemini.WithModel("gemini-2.5-flash"))
	f.Fuzz(func(t *testing.T, kind uint8, raw string) {
		it, err := state.ParseItem(state.Kind(kind), []byte(raw))
		if err != nil {
			return
		}
		_, err = m.Respond(context.Background(), &pipeline.ModelCall{Input: state.ItemsOf([]state.Item{state.UserMessage("hi"), it})})
		if _, ok := errors.AsType[*pipeline.ModelError](err); err != nil && !ok {
			t.Fatalf("item %s %s: error %v (%T), want a *pipeline.ModelError", state.Kind(kind), raw, err, err)
		}
	})
}
