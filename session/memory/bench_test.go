package memory_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

var sinkErr error

// BenchmarkAppendTurn times what persistence appends for a tool turn (a
// call and its output at the run's next positions, in one append) into a
// session of 64 items, and the two pops that take them out again, so that
// the session stays the size it was: the store's steady state, its slices
// and maps grown once.
func BenchmarkAppendTurn(b *testing.B) {
	ctx := context.Background()
	s := memory.New()
	b.Cleanup(func() { _ = s.Close() })
	var hist []state.Item
	for i := range 64 {
		hist = append(hist, state.UserMessage("hi").WithSeq(int64(i+1)))
	}
	if err := s.Append(ctx, "s", "run", hist); err != nil {
		b.Fatal(err)
	}
	turn := []state.Item{
		state.ToolCall("fc_1", "call_1", "echo", `{}`).WithSeq(65),
		state.ToolOutput("call_1", "echo", "ok").WithSeq(66),
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = s.Append(ctx, "s", "run", turn)
		for range turn {
			if _, ok, err := s.Pop(ctx, "s"); !ok || err != nil {
				b.Fatalf("pop: %v, %v", ok, err)
			}
		}
	}
	if sinkErr != nil {
		b.Fatal(sinkErr)
	}
}
