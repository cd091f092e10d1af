package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

type forecast struct {
	City    string   `json:"city"`
	Celsius int      `json:"celsius"`
	Sky     string   `json:"sky" jsonschema:"enum=sunny,enum=cloudy,enum=rainy"`
	Alerts  []string `json:"alerts"`
}

type billingNote struct {
	Account string `json:"account"`
}

var forecastOutput = tool.MustOutput[forecast](tool.OutputDescription("A weather forecast."))

// structuredRun runs agent, plain or streamed, and returns the result (in
// a stream, RunCompleted's) or the run's error.
func structuredRun(t *testing.T, stream bool, agent *pipeline.Agent) (*pipeline.Result, error) {
	t.Helper()
	r := pipeline.NewRunner()
	in := pipeline.UserInput("weather in Paris?")
	if !stream {
		return r.Run(context.Background(), agent, in)
	}
	var res *pipeline.Result
	for ev, err := range r.Stream(context.Background(), agent, in) {
		if err != nil {
			return nil, err
		}
		if done, ok := ev.(pipeline.RunCompleted); ok {
			res = done.Result
		}
	}
	return res, nil
}

// format returns the structured output format of a recorded request: the
// Responses API's text.format, or Chat Completions' response_format.
func format(t *testing.T, api string, body []byte) map[string]any {
	t.Helper()
	var req struct {
		Text struct {
			Format map[string]any `json:"format"`
		} `json:"text"`
		ResponseFormat map[string]any `json:"response_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if api == "chat" {
		return req.ResponseFormat
	}
	return req.Text.Format
}

// TestStructuredOutput sends an agent's output type through the real
// openai-go client, on both APIs and in both modes, checks the request's
// text.format / response_format, and decodes the answer, live and after a
// JSON round trip of the state.
func TestStructuredOutput(t *testing.T) {
	want := forecast{City: "Paris", Celsius: 22, Sky: "sunny", Alerts: []string{}}
	schema := json.RawMessage(forecastOutput.OutputSpec().Schema)
	var schemaValue any
	if err := json.Unmarshal(schema, &schemaValue); err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{"responses", "chat"} {
		var values []forecast
		for _, mode := range modes {
			t.Run(api+"/"+mode.name, func(t *testing.T) {
				srv := newServer(t, reply{file: api + "_structured.json"})
				agent := &pipeline.Agent{
					Name: "forecaster", Model: newModel(api, srv), Output: forecastOutput,
					Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
				}
				res, err := structuredRun(t, mode.stream, agent)
				if err != nil {
					t.Fatal(err)
				}
				wantFormat := map[string]any{
					"name": "forecast", "description": "A weather forecast.", "strict": true, "schema": schemaValue,
				}
				if api == "chat" {
					wantFormat = map[string]any{"type": "json_schema", "json_schema": wantFormat}
				} else {
					wantFormat["type"] = "json_schema"
				}
				if d := cmp.Diff(wantFormat, format(t, api, srv.Requests()[0].body)); d != "" {
					t.Errorf("request format (-want +got):\n%s", d)
				}
				got, err := pipeline.OutputAs[forecast](res)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("OutputAs (-want +got):\n%s", d)
				}
				data, err := state.Marshal(res.State())
				if err != nil {
					t.Fatal(err)
				}
				st, err := state.Unmarshal(data)
				if err != nil {
					t.Fatal(err)
				}
				again, err := pipeline.DecodeOutput[forecast](agent, st)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(got, again); d != "" {
					t.Errorf("after a round trip (-live +decoded):\n%s", d)
				}
				values = append(values, got)
			})
		}
		if len(values) == 2 {
			if d := cmp.Diff(values[0], values[1]); d != "" {
				t.Errorf("%s: plain and streamed values differ (-plain +stream):\n%s", api, d)
			}
		}
	}
}

// TestStructuredOutputText: an agent without an output type sends no
// format, as before.
func TestStructuredOutputText(t *testing.T) {
	for _, api := range []string{"responses", "chat"} {
		srv := newServer(t, reply{file: api + "_text.json"})
		agent := &pipeline.Agent{Name: "a", Model: newModel(api, srv), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
		if _, err := structuredRun(t, false, agent); err != nil {
			t.Fatal(err)
		}
		if f := format(t, api, srv.Requests()[0].body); f != nil {
			t.Errorf("%s: a text agent sent format %v", api, f)
		}
	}
}

func TestStructuredOutputErrors(t *testing.T) {
	tests := []struct {
		name, api, file string
		check           func(t *testing.T, err error)
	}{
		{"refusal", "responses", "responses_refusal.json", wantRefusal},
		{"chat refusal", "chat", "chat_refusal.json", wantRefusal},
		{"schema mismatch", "responses", "responses_structured_mismatch.json", func(t *testing.T, err error) {
			var oe *pipeline.OutputError
			if !errors.As(err, &oe) || oe.Path != "celsius" || oe.Raw != `{"city":"Paris","celsius":"warm","sky":"sunny","alerts":[]}` {
				t.Errorf("err = %v, want an OutputError at celsius with the raw text", err)
			}
		}},
		{"not JSON", "chat", "chat_text.json", func(t *testing.T, err error) {
			var oe *pipeline.OutputError
			if !errors.As(err, &oe) || oe.Offset == 0 || oe.Raw != "The weather in Paris is sunny, 22 degrees." {
				t.Errorf("err = %v, want an OutputError with an offset and the raw text", err)
			}
		}},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				srv := newServer(t, reply{file: tt.file})
				agent := &pipeline.Agent{
					Name: "forecaster", Model: newModel(tt.api, srv), Output: forecastOutput,
					Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
				}
				_, err := structuredRun(t, mode.stream, agent)
				tt.check(t, err)
			})
		}
	}
}

func wantRefusal(t *testing.T, err error) {
	t.Helper()
	var re *pipeline.RefusalError
	if !errors.As(err, &re) || re.Refusal != "I'm sorry, I can't help with that." {
		t.Errorf("err = %v, want a RefusalError", err)
	}
	if errors.Is(err, pipeline.ErrInvalidOutput) {
		t.Error("a refusal was decoded as JSON")
	}
}

// TestStructuredOutputHandoff: each agent sends its own format, and the
// result's type is that of the agent that produced the final output.
func TestStructuredOutputHandoff(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newServer(t, reply{file: "responses_handoff.json"}, reply{file: "responses_structured.json"})
			m := newModel("responses", srv)
			settings := pipeline.ModelSettings{Model: "gpt-5-mini"}
			billing := &pipeline.Agent{Name: "billing", Model: m, Settings: settings, Output: forecastOutput}
			triage := &pipeline.Agent{
				Name: "assistant", Model: m, Settings: settings, Output: tool.MustOutput[billingNote](),
				Handoffs: []pipeline.Handoff{{Agent: billing}},
			}
			res, err := structuredRun(t, mode.stream, triage)
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if n1, n2 := format(t, "responses", reqs[0].body)["name"], format(t, "responses", reqs[1].body)["name"]; n1 != "billingNote" || n2 != "forecast" {
				t.Errorf("formats sent: %v then %v, want billingNote then forecast", n1, n2)
			}
			var te *pipeline.OutputTypeError
			if _, err := pipeline.OutputAs[billingNote](res); !errors.As(err, &te) || te.Agent != "billing" {
				t.Errorf("OutputAs[billingNote] = %v, want an OutputTypeError naming billing", err)
			}
			if got, err := pipeline.OutputAs[forecast](res); err != nil || got.City != "Paris" {
				t.Errorf("OutputAs[forecast] = %+v, %v", got, err)
			}
		})
	}
}
