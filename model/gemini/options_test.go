package gemini_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

func ptr[T any](v T) *T { return &v }

// The agent's settings and the adapter's own options reach the request.
func TestSettingsAndOptions(t *testing.T) {
	srv := newServer(t, okReply)
	m := gemini.New(srv.client(),
		gemini.WithModel("gemini-2.5-pro"),
		gemini.WithSafetySettings(&genai.SafetySetting{Category: genai.HarmCategoryDangerousContent, Threshold: genai.HarmBlockThresholdBlockOnlyHigh}),
		gemini.WithThinking(genai.ThinkingConfig{ThinkingBudget: ptr(int32(1024)), IncludeThoughts: true}),
		gemini.WithHTTPOptions(genai.HTTPOptions{Headers: http.Header{"X-Team": {"weather"}}}),
		gemini.WithConfig(func(c *genai.GenerateContentConfig) { c.TopK = ptr(float32(40)); c.Seed = ptr(int32(7)) }),
	)
	c := &pipeline.ModelCall{
		Input: state.ItemsOf([]state.Item{state.UserMessage("hi")}),
		Tools: []pipeline.ToolSpec{
			{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "search", Hosted: json.RawMessage(`{"googleSearch":{}}`)},
		},
		Settings: pipeline.ModelSettings{
			Temperature: ptr(0.5), TopP: ptr(0.25), MaxOutputTokens: ptr(int64(512)), ToolChoice: "get_weather",
			ReasoningEffort: "high", // WithThinking wins
		},
	}
	if _, err := m.Respond(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	got := srv.got()[0]
	if want := "/v1beta/models/gemini-2.5-pro:generateContent"; got.Path != want {
		t.Errorf("path %s, want %s (WithModel)", got.Path, want)
	}
	if h := got.Header.Get("X-Team"); h != "weather" {
		t.Errorf("X-Team header %q, want weather", h)
	}
	want := jsonOf(t, `{
		"generationConfig":{"temperature":0.5,"topP":0.25,"topK":40,"seed":7,"maxOutputTokens":512,
			"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}},
		"safetySettings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","threshold":"BLOCK_ONLY_HIGH"}],
		"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}},
		"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object"}}]},{"googleSearch":{}}]
	}`).(map[string]any)
	for k, v := range want {
		if diff := cmp.Diff(v, got.Body[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
}

// The agent's reasoning effort is the thinking level when no thinking
// config is given; "none" turns thinking off.
func TestReasoningEffort(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{give: "low", want: `{"thinkingLevel":"LOW"}`},
		{give: "high", want: `{"thinkingLevel":"HIGH"}`},
		{give: "none", want: `{"thinkingBudget":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, okReply)
			c := &pipeline.ModelCall{Input: state.ItemsOf([]state.Item{state.UserMessage("hi")}),
				Settings: pipeline.ModelSettings{Model: "gemini-3-pro-preview", ReasoningEffort: tt.give}}
			if _, err := gemini.New(srv.client()).Respond(t.Context(), c); err != nil {
				t.Fatal(err)
			}
			gen, _ := srv.got()[0].Body["generationConfig"].(map[string]any)
			if diff := cmp.Diff(jsonOf(t, tt.want), gen["thinkingConfig"]); diff != "" {
				t.Errorf("thinkingConfig (-want +got):\n%s", diff)
			}
		})
	}
}

// What the API has no equivalent for fails before any request.
func TestRefusedCall(t *testing.T) {
	tests := []struct {
		name   string
		give   pipeline.ModelCall
		wantIs error
	}{
		{name: "unknown effort", give: pipeline.ModelCall{Settings: pipeline.ModelSettings{Model: "m", ReasoningEffort: "xhigh"}}, wantIs: gemini.ErrUnsupportedSetting},
		{name: "custom tool", give: pipeline.ModelCall{Settings: pipeline.ModelSettings{Model: "m"},
			Tools: []pipeline.ToolSpec{{Name: "grep", Custom: json.RawMessage(`{"type":"text"}`)}}}, wantIs: gemini.ErrUnsupportedTool},
		{name: "another API's hosted tool", give: pipeline.ModelCall{Settings: pipeline.ModelSettings{Model: "m"},
			Tools: []pipeline.ToolSpec{{Name: "web", Hosted: json.RawMessage(`{"type":"web_search"}`)}}}, wantIs: gemini.ErrUnsupportedTool},
		{name: "no model", give: pipeline.ModelCall{}, wantIs: pipeline.ErrModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, okReply)
			c := tt.give
			c.Input = state.ItemsOf([]state.Item{state.UserMessage("hi")})
			_, err := gemini.New(srv.client()).Respond(t.Context(), &c)
			if !errors.Is(err, tt.wantIs) || !errors.Is(err, pipeline.ErrModel) {
				t.Errorf("error %v, want %v inside a pipeline.ModelError", err, tt.wantIs)
			}
			if n := len(srv.got()); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
}

// The adapter names its provider for tracing.
func TestProviderName(t *testing.T) {
	srv := newServer(t)
	if got := gemini.New(srv.client()).ProviderName(); got != "gcp.gemini" {
		t.Errorf("ProviderName() = %q, want gcp.gemini", got)
	}
}
