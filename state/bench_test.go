package state_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/turnkit/turnkit/state"
)

var (
	sinkBytes []byte
	sinkRun   *state.Run
)

// benchRun returns a run of n items: user input, then responses of a
// message and a tool call with its output.
func benchRun(b testing.TB, n int) *state.Run {
	b.Helper()
	r := state.NewRun("run_bench", "assistant")
	r.AddInput(state.UserMessage("start"))
	for i := 0; r.Len() < n; i++ {
		first := r.Reserve(3)
		callID := fmt.Sprintf("call_%d", i)
		err := r.Record(
			state.AssistantMessage(fmt.Sprintf("msg_%d", i), "Looking that up for you now.").WithSeq(first),
			state.ToolCall(fmt.Sprintf("fc_%d", i), callID, "lookup", `{"query":"item `+fmt.Sprint(i)+`","limit":10}`).WithSeq(first+1),
			state.ToolOutput(callID, "lookup", `{"results":["a","b","c"],"took_ms":12}`).WithSeq(first+2),
		)
		if err != nil {
			b.Fatal(err)
		}
		r.SetResponse(state.Boundary{Start: first, End: first + 2, OutputsEnd: first + 3})
	}
	return r
}

func BenchmarkMarshal(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			r := benchRun(b, n)
			data, _ := state.Marshal(r)
			b.ReportAllocs()
			for b.Loop() {
				sinkBytes, _ = state.Marshal(r)
			}
			b.ReportMetric(float64(len(data)), "checkpoint-bytes")
		})
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			data, err := state.Marshal(benchRun(b, n))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				sinkRun, err = state.Unmarshal(data)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "checkpoint-bytes")
		})
	}
}

func BenchmarkSignedRoundTrip(b *testing.B) {
	key := []byte("benchmark key, thirty-two bytes!")
	verify := state.WithVerifyKeys(map[string][]byte{"k": key})
	r := benchRun(b, 100)
	b.ReportAllocs()
	for b.Loop() {
		data, err := state.Marshal(r, state.WithSigningKey("k", key))
		if err != nil {
			b.Fatal(err)
		}
		if sinkRun, err = state.Unmarshal(data, verify); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseItem parses the JSON of each kind of item, as session
// stores rebuild items, with ParseItem and with its encoding/json
// reference.
func BenchmarkParseItem(b *testing.B) {
	items := []state.Item{
		state.UserMessage("What is the weather in Paris?"),
		state.AssistantMessage("msg_1", "Looking that up for you now."),
		state.ToolCall("fc_1", "call_1", "lookup", `{"query":"weather Paris","limit":10}`),
		state.ToolOutput("call_1", "lookup", `{"results":["a","b","c"],"took_ms":12}`),
	}
	for _, p := range []struct {
		name  string
		parse func(state.Kind, []byte) (state.Item, error)
	}{{"fast", state.ParseItem}, {"encoding-json", state.ParseItemReference}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, it := range items {
					if _, err := p.parse(it.Kind(), it.Raw()); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkCodecReference measures the encoding/json reference paths of
// Marshal and Unmarshal (export_test.go) on the runs of BenchmarkMarshal
// and BenchmarkUnmarshal, for the ratio of the fast paths to them.
func BenchmarkCodecReference(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		r := benchRun(b, n)
		data, err := state.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("encode/items=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkBytes, _ = state.MarshalReference(r)
			}
		})
		b.Run(fmt.Sprintf("decode/items=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if sinkRun, err = state.UnmarshalReference(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnmarshalBad measures Unmarshal on a checkpoint of 1000 items
// beside the same checkpoint corrupted near its end, so that the error
// path's cost can be compared with the good path's: a syntax error (a
// byte replaced by garbage), a type error (a tool name written as a
// number), an unknown field (a misspelt one), and a well-formed but
// inconsistent run (a negative index).
func BenchmarkUnmarshalBad(b *testing.B) {
	data, err := state.Marshal(benchRun(b, 1000))
	if err != nil {
		b.Fatal(err)
	}
	last := bytes.LastIndex(data, []byte(`"seq":`))
	corrupt := func(from, to string, at int) []byte {
		i := at + bytes.Index(data[at:], []byte(from))
		return slices.Concat(data[:i], []byte(to), data[i+len(from):])
	}
	for _, c := range []struct {
		name    string
		data    []byte
		wantErr bool
	}{
		{"good", data, false},
		{"syntax", corrupt(`"kind"`, `#kind"`, last), true},
		{"type", corrupt(`"name":"lookup"`, `"name":12`, last), true},
		{"unknown-field", corrupt(`"name":"lookup"`, `"nmae":"lookup"`, last), true},
		{"invalid", corrupt(`"context_from":0`, `"context_from":-1`, 0), true},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkRun, err = state.Unmarshal(c.data)
				if (err != nil) != c.wantErr {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.data)), "checkpoint-bytes")
		})
	}
}

// BenchmarkDeltaAssemble measures a store's save of one turn on a run of
// n items (Run.Delta: a small head and the turn's items) and its load of
// the run (Assemble: the whole run decoded), with the fast paths and with
// encoding/json alone (export_test.go), for the ratio in the package doc.
func BenchmarkDeltaAssemble(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		r := benchRun(b, n)
		var (
			head, ctx []byte
			pieces    []state.Piece
		)
		save := func(d *state.Delta) {
			head = d.Head
			if d.Context != nil {
				ctx = d.Context
			}
			pieces = append(pieces, d.Items...)
			r.Saved(d)
		}
		d, err := r.Delta()
		if err != nil {
			b.Fatal(err)
		}
		save(d)
		first := r.Reserve(2)
		if err := r.Record(
			state.ToolCall("fc_new", "call_new", "lookup", `{"query":"new","limit":10}`).WithSeq(first),
			state.ToolOutput("call_new", "lookup", `{"results":["a"],"took_ms":3}`).WithSeq(first+1),
		); err != nil {
			b.Fatal(err)
		}
		for _, p := range []struct {
			name     string
			delta    func(*state.Run) (*state.Delta, error)
			assemble func(head, ctx []byte, pieces []state.Piece) (*state.Run, error)
		}{
			{"fast", func(r *state.Run) (*state.Delta, error) { return r.Delta() }, func(h, c []byte, p []state.Piece) (*state.Run, error) { return state.Assemble(h, c, p) }},
			{"encoding-json", state.DeltaReference, state.AssembleReference},
		} {
			b.Run(fmt.Sprintf("delta/%s/items=%d", p.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					d, err := p.delta(r)
					if err != nil {
						b.Fatal(err)
					}
					sinkBytes = d.Head
				}
			})
			b.Run(fmt.Sprintf("assemble/%s/items=%d", p.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if sinkRun, err = p.assemble(head, ctx, pieces); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
