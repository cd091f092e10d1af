package logging_test

import (
	"context"
	"io"
	"runtime"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

var sinkResult *pipeline.Result

// turns is the length of a benchmarked run.
const turns = 10

// BenchmarkTurn measures a run of ten turns (nine with a model call and a
// tool call, then a final reply) bare and with the logging middleware on
// zap.NewNop, on a production JSON encoder writing to io.Discard at info
// level (one event per run), and at debug level (every event). It reports
// ns/turn and allocs/turn besides the per-run figures.
func BenchmarkTurn(b *testing.B) {
	production := func(level zapcore.Level) *zap.Logger {
		enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
		return zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), level))
	}
	tests := []struct {
		name string
		mws  []pipeline.Middleware
	}{
		{"bare", nil},
		{"logging/nop", []pipeline.Middleware{logging.Middleware(zap.NewNop())}},
		{"logging/production-info", []pipeline.Middleware{logging.Middleware(production(zap.InfoLevel))}},
		{"logging/production-debug", []pipeline.Middleware{logging.Middleware(production(zap.DebugLevel))}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			r := pipeline.NewRunner(pipeline.WithMiddleware(tt.mws...))
			a := &pipeline.Agent{
				Name: "bench",
				Model: scripted.Generate(func(n int) scripted.Step {
					if n%turns == 0 {
						return scripted.Reply("done")
					}
					return scripted.CallTool("echo", `{}`)
				}),
				Tools: []pipeline.Tool{echo("echo")},
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
