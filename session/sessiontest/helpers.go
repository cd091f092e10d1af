package sessiontest

import (
	"context"
	"testing"
	"time"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// Batch returns the i-th append of a benchmark run: three items (a tool
// call, its output and the assistant's message) at Seq 3i+1 to 3i+3. Each
// call builds new items.
func Batch(i int64) []state.Item {
	return []state.Item{
		state.ToolCall("fc", "call", "lookup", `{"q":"weather in Paris"}`).WithSeq(3*i + 1),
		state.ToolOutput("call", "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(3*i + 2),
		state.AssistantMessage("msg", "It is 18°C and clear in Paris.").WithSeq(3*i + 3),
	}
}

// AppendPaired is the loop of a store's BenchmarkAppendPaired: each
// iteration appends Batch(i) to session sessionID of s, then calls same(i)
// (a raw driver making the store's same writes), each timed on its own,
// and it reports each one's mean time per commit and their ratio
// (store/same). On a shared machine, whose speed drifts between two
// sub-benchmarks run one after the other, each pair meets the same
// machine; the iteration's time is the two's. It returns the number of
// commits made, and fails b at the first error of either.
func AppendPaired(b *testing.B, s session.Store, sessionID string, same func(i int64) error) int64 {
	ctx := context.Background()
	var (
		i          int64
		store, raw time.Duration
	)
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		err := s.Append(ctx, sessionID, "run", Batch(i))
		t1 := time.Now()
		if err == nil {
			err = same(i)
		}
		store, raw = store+t1.Sub(t0), raw+time.Since(t1)
		if err != nil {
			b.Fatalf("commit %d: %v", i, err)
		}
		i++
	}
	b.ReportMetric(float64(store.Nanoseconds())/float64(i), "store-ns/commit")
	b.ReportMetric(float64(raw.Nanoseconds())/float64(i), "same-ns/commit")
	b.ReportMetric(float64(store)/float64(raw), "store/same")
	return i
}
