package tool_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

// BenchmarkOutput measures what structured output adds to a run: the same
// one-turn run whose final message is the same JSON text, kept as text
// ("text") or decoded into an output type and read with OutputAs
// ("typed"). The difference is the cost of validation and decoding.
func BenchmarkOutput(b *testing.B) {
	const reply = `{"title":"printer on fire","priority":"high","tags":["hardware","urgent"],"due":"2026-01-02"}`
	text := &pipeline.Agent{Name: "a", Model: scripted.Generate(func(int) scripted.Step { return scripted.Reply(reply) })}
	typed := &pipeline.Agent{Name: "a", Model: text.Model, Output: tool.MustOutput[ticket]()}
	r := pipeline.NewRunner()
	in := pipeline.UserInput("file a ticket")
	ctx := context.Background()
	b.Run("text", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := r.Run(ctx, text, in)
			if err != nil || res.FinalOutput() != reply {
				b.Fatal(err)
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := r.Run(ctx, typed, in)
			if err != nil {
				b.Fatal(err)
			}
			if v, err := pipeline.OutputAs[ticket](res); err != nil || v.Title == "" {
				b.Fatal(err)
			}
		}
	})
}
