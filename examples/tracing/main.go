// Tracing runs an agent with the OpenTelemetry middleware and exports its
// spans: to stdout as JSON by default, or over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set (e.g. http://localhost:4318 for a
// local collector or Jaeger). It runs offline on the scripted model, and on
// OpenAI when OPENAI_API_KEY is set.
//
//	go run ./examples/tracing
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run ./examples/tracing
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	sdk "github.com/openai/openai-go/v3"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
	"github.com/turnkit/turnkit/tracing"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

// run runs one agent under tracing and logging and writes the final output
// to w; without an OTLP endpoint the spans go to w too, as JSON.
func run(ctx context.Context, w io.Writer) (err error) {
	exporter, err := newExporter(ctx, w)
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewSchemaless()),
	)
	// Shutdown flushes the batch: every span is exported before run returns.
	defer func() {
		if serr := tp.Shutdown(context.Background()); serr != nil && err == nil {
			err = fmt.Errorf("export spans: %w", serr)
		}
	}()

	model, provider := newModel()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		tracing.Middleware(tracing.WithTracerProvider(tp), tracing.WithProviderName(provider)),
		logging.Middleware(zap.NewNop()), // swap in a real logger to see the run's events
	))
	agent := &pipeline.Agent{
		Name:         "weather",
		Instructions: "Answer with the weather tool.",
		Model:        model,
		Settings:     pipeline.ModelSettings{Model: "gpt-5-mini"},
		Tools:        []pipeline.Tool{weatherTool()},
	}
	res, err := runner.Run(ctx, agent, pipeline.UserInput("What's the weather in Oslo?"), pipeline.WithSessionID("example-session"))
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "final output:", res.FinalOutput())
	return nil
}

// newExporter returns an OTLP/HTTP exporter when OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; the exporter reads those
// variables itself. Otherwise spans are printed to w.
func newExporter(ctx context.Context, w io.Writer) (sdktrace.SpanExporter, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("otlp exporter: %w", err)
		}
		return exp, nil
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint())
	if err != nil {
		return nil, fmt.Errorf("stdout exporter: %w", err)
	}
	return exp, nil
}

// newModel returns OpenAI's Responses API when OPENAI_API_KEY is set, and a
// scripted model that needs no network otherwise, with its provider name.
func newModel() (pipeline.Model, string) {
	if os.Getenv("OPENAI_API_KEY") != "" {
		return openai.New(sdk.NewClient(), openai.WithModel("gpt-5-mini")), "openai"
	}
	return scripted.New(
		scripted.CallTool("get_weather", `{"city":"Oslo"}`),
		scripted.Reply("It is 18°C and clear in Oslo."),
	), "scripted"
}

// WeatherArgs are the arguments of get_weather.
type WeatherArgs struct {
	City string `json:"city" jsonschema:"description=City name, e.g. Oslo"`
}

func weatherTool() pipeline.Tool {
	return tool.Func("get_weather", "Current weather for a city.",
		func(ctx context.Context, in WeatherArgs) (string, error) {
			return in.City + ": 18°C, clear", nil
		})
}
