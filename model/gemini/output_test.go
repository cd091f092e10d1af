package gemini_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
	"github.com/turnkit/turnkit/tracing"
)

type forecast struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
}

var forecastOutput = tool.MustOutput[forecast](tool.OutputDescription("A weather forecast."))

func forecastAgent(m pipeline.Model) *pipeline.Agent {
	return &pipeline.Agent{Name: "forecaster", Model: m, Output: forecastOutput,
		Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"}}
}

// Structured output is asked for with the response schema, and the final
// text decodes into the output type, streamed or not.
func TestStructuredOutput(t *testing.T) {
	for _, stream := range []bool{false, true} {
		file := "forecast.json"
		if stream {
			file = "forecast.sse"
		}
		srv := newServer(t, reply{file: file})
		res, err := structuredRun(t, stream, forecastAgent(gemini.New(srv.client())))
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		got, err := pipeline.OutputAs[forecast](res)
		if err != nil {
			t.Fatalf("stream=%v: OutputAs: %v", stream, err)
		}
		if want := (forecast{City: "Paris", TempC: 22}); got != want {
			t.Errorf("stream=%v: output %+v, want %+v", stream, got, want)
		}
		gen, _ := srv.got()[0].Body["generationConfig"].(map[string]any)
		want := jsonOf(t, `{"responseMimeType":"application/json","responseJsonSchema":`+string(forecastOutput.OutputSpec().Schema)+`}`)
		if diff := cmp.Diff(want, any(gen)); diff != "" {
			t.Errorf("stream=%v: generationConfig (-want +got):\n%s", stream, diff)
		}
	}
}

// A final text that does not match the schema is the runner's
// *pipeline.OutputError, with the text the model sent.
func TestStructuredOutputInvalid(t *testing.T) {
	srv := newServer(t, reply{file: "forecast_invalid.json"})
	_, err := structuredRun(t, false, forecastAgent(gemini.New(srv.client())))
	oe, ok := errors.AsType[*pipeline.OutputError](err)
	if !ok {
		t.Fatalf("error %v, want a *pipeline.OutputError", err)
	}
	if oe.Path != "temp_c" || oe.Raw != `{"city":"Paris","temp_c":"warm"}` {
		t.Errorf("OutputError{Path: %q, Raw: %q}", oe.Path, oe.Raw)
	}
}

// A blocked answer to an agent with an output type is a typed error
// wrapping ErrBlocked, never a decoded value.
func TestStructuredOutputBlocked(t *testing.T) {
	srv := newServer(t, reply{file: "safety.json"})
	_, err := structuredRun(t, false, forecastAgent(gemini.New(srv.client())))
	if !errors.Is(err, gemini.ErrBlocked) {
		t.Fatalf("error %v, want gemini.ErrBlocked", err)
	}
}

func structuredRun(t *testing.T, stream bool, agent *pipeline.Agent) (*pipeline.Result, error) {
	t.Helper()
	runner := pipeline.NewRunner()
	input := pipeline.UserInput("Forecast for Paris?")
	if !stream {
		return runner.Run(context.Background(), agent, input)
	}
	var res *pipeline.Result
	for ev, err := range runner.Stream(context.Background(), agent, input) {
		if err != nil {
			return nil, err
		}
		if rc, ok := ev.(pipeline.RunCompleted); ok {
			res = rc.Result
		}
	}
	return res, nil
}

// The model's span says the provider is gcp.gemini.
func TestSpanProviderName(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	srv := newServer(t, reply{file: "text.json"})
	runner := pipeline.NewRunner(pipeline.WithMiddleware(tracing.Middleware(tracing.WithTracerProvider(tp))))
	if _, err := runner.Run(context.Background(), weatherAgent(gemini.New(srv.client())), pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, s := range rec.Ended() {
		if s.Name() != "chat gemini-2.5-flash" {
			continue
		}
		found = true
		for _, kv := range s.Attributes() {
			if kv.Key == "gen_ai.provider.name" && kv.Value != attribute.StringValue("gcp.gemini") {
				t.Errorf("gen_ai.provider.name = %v, want gcp.gemini", kv.Value.Emit())
			}
		}
		if !hasAttr(s.Attributes(), "gen_ai.provider.name") {
			t.Errorf("span %s has no gen_ai.provider.name", s.Name())
		}
	}
	if !found {
		t.Fatalf("no span named chat gemini-2.5-flash among %d spans", len(rec.Ended()))
	}
}

func hasAttr(kvs []attribute.KeyValue, key attribute.Key) bool {
	for _, kv := range kvs {
		if kv.Key == key {
			return true
		}
	}
	return false
}
