package encrypt_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

var (
	sinkItems []state.Item
	sinkDelta *state.Delta
)

// BenchmarkSealCost isolates the CPU encryption adds to a tool turn of
// the crash-safe chain: the items the turn appends (a call and its
// output), sealed, and the delta its checkpoint save writes, built
// plain and sealed. Add the two sealed rows' excess over the plain ones
// and compare it with a turn on a backend (bench: crashsafe/sqlite).
func BenchmarkSealCost(b *testing.B) {
	ctx := context.Background()
	items := []state.Item{
		state.ToolCall("fc_1", "call_1", "lookup", `{"q":"the weather in Paris tomorrow"}`).WithSeq(11),
		state.ToolOutput("call_1", "lookup", `{"forecast":"sunny, 21 degrees","wind":"light"}`).WithSeq(12),
	}
	kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("k"), encrypt.WithKeyStore(encrypt.MemoryKeys()))
	if err := encrypt.LoadKey(ctx, kr, "session-1"); err != nil {
		b.Fatal(err)
	}
	b.Run("items/sealed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if sinkItems, err = encrypt.SealItems(ctx, kr, "session-1", "r", items); err != nil {
				b.Fatal(err)
			}
		}
	})
	m, _ := kr.Codec()
	for _, sealed := range []bool{false, true} {
		var opts []state.MarshalOption
		if sealed {
			opts = m
		}
		b.Run("delta/"+map[bool]string{false: "plain", true: "sealed"}[sealed], func(b *testing.B) {
			run := statetest.SampleRun(b, "r") // session-1
			d, err := run.Delta(opts...)
			if err != nil {
				b.Fatal(err)
			}
			runcore.Saved(run, d)
			b.ReportAllocs()
			for b.Loop() {
				// One tool turn: its call and output recorded, then saved.
				seq := runcore.Reserve(run, 2)
				call := state.ToolCall("fc", "c", "lookup", `{"q":"the weather in Paris tomorrow"}`).WithSeq(seq)
				out := state.ToolOutput("c", "lookup", `{"forecast":"sunny, 21 degrees","wind":"light"}`).WithSeq(seq + 1)
				if err := runcore.RecordAll(run, call, out); err != nil {
					b.Fatal(err)
				}
				if sinkDelta, err = run.Delta(opts...); err != nil {
					b.Fatal(err)
				}
				runcore.Saved(run, sinkDelta)
			}
		})
	}
}
