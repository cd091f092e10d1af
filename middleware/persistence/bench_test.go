package persistence_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
)

var sinkResult *pipeline.Result

// BenchmarkTurn measures the per-turn cost of persistence on session/memory
// against the bare runner, in runs of 10 and 100 turns (each turn a tool
// call and its output; the last a final message). ns/turn staying flat as
// runs grow shows the per-turn work is O(new items). Each run uses a fresh
// session, so the history read at the start is empty.
func BenchmarkTurn(b *testing.B) {
	for _, turns := range []int{10, 100} {
		for _, mode := range []string{"bare", "persistence"} {
			b.Run(fmt.Sprintf("turns=%d/%s", turns, mode), func(b *testing.B) {
				model := scripted.Generate(func(n int) scripted.Step {
					if n%turns == 0 {
						return scripted.Reply("done")
					}
					return scripted.CallTool("noop", `{}`)
				})
				noop := toolFunc{name: "noop", fn: func(context.Context, *pipeline.ToolCall) (string, error) { return "ok", nil }}
				agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{noop}}
				opts := []pipeline.Option{pipeline.WithMaxTurns(turns)}
				store := memory.New()
				b.Cleanup(func() { _ = store.Close() })
				if mode == "persistence" {
					opts = append(opts, pipeline.WithMiddleware(persistence.Middleware(store)))
				}
				runner := pipeline.NewRunner(opts...)
				ctx := context.Background()
				input := pipeline.UserInput("go")
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					res, err := runner.Run(ctx, agent, input, pipeline.WithSessionID("s"+strconv.Itoa(i)))
					if err != nil {
						b.Fatal(err)
					}
					sinkResult = res
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/turn")
			})
		}
	}
}
