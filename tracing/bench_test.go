package tracing_test

import (
	"context"
	"runtime"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tracing"
)

var sinkResult *pipeline.Result

// turns is the length of a benchmarked run.
const turns = 10

// BenchmarkTurn measures a run of ten turns (nine with a model call and a
// tool call, then a final reply) bare, and with the tracing middleware
// under no provider (the global default), a no-op provider, and the SDK
// with no exporter, with and without an SDK meter. It reports ns/turn and
// allocs/turn besides the per-run figures.
func BenchmarkTurn(b *testing.B) {
	tests := []struct {
		name string
		mws  func(b *testing.B) []pipeline.Middleware
	}{
		{"bare", func(*testing.B) []pipeline.Middleware { return nil }},
		{"tracing/global", func(*testing.B) []pipeline.Middleware {
			return []pipeline.Middleware{tracing.Middleware()}
		}},
		{"tracing/noop", func(*testing.B) []pipeline.Middleware {
			return []pipeline.Middleware{tracing.Middleware(tracing.WithTracerProvider(noop.NewTracerProvider()))}
		}},
		{"tracing/sdk", func(b *testing.B) []pipeline.Middleware {
			tp := sdktrace.NewTracerProvider()
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			return []pipeline.Middleware{tracing.Middleware(tracing.WithTracerProvider(tp))}
		}},
		{"tracing/sdk+metrics", func(b *testing.B) []pipeline.Middleware {
			tp := sdktrace.NewTracerProvider()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() {
				_ = tp.Shutdown(context.Background())
				_ = mp.Shutdown(context.Background())
			})
			return []pipeline.Middleware{tracing.Middleware(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp))}
		}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			r := pipeline.NewRunner(pipeline.WithMiddleware(tt.mws(b)...))
			a := &pipeline.Agent{
				Name: "bench",
				Model: scripted.Generate(func(n int) scripted.Step {
					if n%turns == 0 {
						return scripted.Reply("done")
					}
					return scripted.CallTool("echo", `{}`)
				}),
				Settings: pipeline.ModelSettings{Model: "gpt-test"},
				Tools:    []pipeline.Tool{echoTool("echo")},
			}
			input := pipeline.UserInput("hi")
			ctx := context.Background()
			b.ReportAllocs()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mallocs := ms.Mallocs
			for b.Loop() {
				res, err := r.Run(ctx, a, input, pipeline.WithRunID("run"))
				if err != nil {
					b.Fatal(err)
				}
				sinkResult = res
			}
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/turn")
			b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N*turns), "allocs/turn")
		})
	}
}
