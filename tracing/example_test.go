package tracing_test

import (
	"context"
	"fmt"
	"sort"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tracing"
)

func ExampleMiddleware() {
	// An SDK provider with an in-memory recorder; a real program would use
	// an exporter (see examples/tracing).
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		tracing.Middleware(tracing.WithTracerProvider(tp), tracing.WithProviderName("openai")),
	))
	agent := &pipeline.Agent{
		Name:     "assistant",
		Model:    scripted.New(scripted.CallTool("echo", `{"text":"hi"}`), scripted.Reply("hi")),
		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
		Tools:    []pipeline.Tool{echoTool("echo")},
	}
	if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("say hi")); err != nil {
		fmt.Println(err)
		return
	}

	ended := spans.Ended()
	sort.SliceStable(ended, func(i, j int) bool { return ended[i].StartTime().Before(ended[j].StartTime()) })
	for _, s := range ended {
		fmt.Println(s.Name())
	}
	// Output:
	// invoke_agent assistant
	// turn
	// chat gpt-5-mini
	// execute_tool echo
	// turn
	// chat gpt-5-mini
}
