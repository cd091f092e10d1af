package bench_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"testing"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// An adapterCase is one row of BenchmarkAdapterShare: the same model call
// made three ways on the same recorded payload. typed is what a program
// using the provider's SDK alone pays (BenchmarkOpenAI's and
// BenchmarkAnthropic's sdk-typed, BenchmarkGemini's sdk); raw is the
// SDK's part of the adapter's call, the client call the adapter makes,
// alone (their sdk, and for streamed Anthropic calls sdk-post: the
// adapter reads the events itself); adapter is the adapter's Respond.
// adapter − raw is the adapter's own cost, and issue 29 holds it to 10%
// of typed. The Gemini adapter calls genai's typed API itself, so its raw
// is its typed call.
type adapterCase struct {
	name                string
	typed, raw, adapter func() error
}

// adapterCases returns every adapter's rows: OpenAI's Responses and Chat
// Completions at 10 and 100 items, Anthropic's at 40 (10 turns of 4
// items) over the in-memory transport, Gemini's at 10 and 100, each plain
// and streamed.
func adapterCases(b *testing.B) []adapterCase {
	var out []adapterCase
	oc := openaiClient(newOpenAITransport())
	for _, api := range []string{"responses", "chat"} {
		m := openaiModel(api, oc)
		for _, stream := range []bool{false, true} {
			for _, n := range []int{10, 100} {
				call := openaiCall(api, n, stream)
				out = append(out, adapterCase{
					name:  fmt.Sprintf("openai-%s/%s/items=%d", api, modeName(stream), n),
					typed: openaiTypedCall(oc, api, openaiHistory(n), stream, nil),
					raw:   openaiSDKCall(b, oc, api, openaiAdapterBody(b, api, call), stream),
					adapter: func() error {
						_, err := m.Respond(context.Background(), call)
						return err
					},
				})
			}
		}
	}
	ac := anthropicClients(b)["memory"]
	am := anthropic.New(ac, anthropic.WithModel("claude-sonnet-4-5"))
	history := anthropicHistory(10)
	for _, stream := range []bool{false, true} {
		call := &pipeline.ModelCall{
			Agent: &pipeline.Agent{Name: "weather"}, Instructions: "You answer questions about the weather.",
			Input: state.ItemsOf(history), Tools: anthropicTools, Stream: stream,
		}
		body := capturedBody(b, call)
		raw := func() error { return sdkPlainPost(ac, body) }
		if stream {
			raw = func() error { return sdkStreamBody(ac, body) }
		}
		out = append(out, adapterCase{
			name:  fmt.Sprintf("anthropic/%s/items=%d", modeName(stream), len(history)),
			typed: anthropicTypedCall(ac, typedParams(history), stream),
			raw:   raw,
			adapter: func() error {
				_, err := am.Respond(context.Background(), call)
				return err
			},
		})
	}
	gc, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "bench", Backend: genai.BackendGeminiAPI,
		HTTPClient: &http.Client{Transport: recordedTransport{}},
	})
	if err != nil {
		b.Fatal(err)
	}
	gm := gemini.New(gc)
	for _, stream := range []bool{false, true} {
		for _, n := range []int{10, 100} {
			sdkCall, adapterCall := geminiCalls(gc, gm, stream, n)
			out = append(out, adapterCase{
				name:  fmt.Sprintf("gemini/%s/items=%d", modeName(stream), n),
				typed: sdkCall, raw: sdkCall, adapter: adapterCall,
			})
		}
	}
	return out
}

func modeName(stream bool) string {
	if stream {
		return "stream"
	}
	return "plain"
}

// BenchmarkAdapterShare measures each adapter's own cost as a share of
// the SDK's typed call, paired: every iteration is a round that makes the
// typed call, the raw call and the adapter's call back to back on the
// same payload (in an order that rotates, so that none always follows
// the garbage of the same other), and own-% is the median over the rounds
// of that round's (adapter − raw) ÷ typed. A machine whose speed drifts
// moves the three calls of a round together, which the ratio cancels;
// the fastest-of-rounds figures of separate benchmarks do not. The three
// calls' medians are reported too, with their allocations and bytes per
// call (counted outside the timed rounds) and own-allocs-%, the same
// share of allocations. turnbench runs it for its adapter rows.
func BenchmarkAdapterShare(b *testing.B) {
	for _, c := range adapterCases(b) {
		b.Run(c.name, func(b *testing.B) {
			calls := []func() error{c.typed, c.raw, c.adapter}
			var mem [3][2]float64
			for i, f := range calls {
				mem[i] = allocsPerCall(b, f, 20)
			}
			var ns [3][]float64
			var shares []float64
			for round := 0; b.Loop(); round++ {
				var d [3]float64
				for k := range 3 {
					i := (round + k) % 3
					d[i] = float64(timed(b, calls[i]))
				}
				for i := range 3 {
					ns[i] = append(ns[i], d[i])
				}
				shares = append(shares, (d[2]-d[1])/d[0])
			}
			for i, name := range []string{"typed", "sdk", "adapter"} {
				b.ReportMetric(medianOf(ns[i]), name+"-ns/call")
				b.ReportMetric(mem[i][0], name+"-allocs/call")
				b.ReportMetric(mem[i][1], name+"-B/call")
			}
			b.ReportMetric(100*medianOf(shares), "own-%")
			b.ReportMetric(100*(mem[2][0]-mem[1][0])/mem[0][0], "own-allocs-%")
		})
	}
}

// allocsPerCall returns the allocations and bytes one call of f makes, on
// average over runs calls after a first one.
func allocsPerCall(b *testing.B, f func() error, runs int) [2]float64 {
	if err := f(); err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	return [2]float64{float64(after.Mallocs-before.Mallocs) / float64(runs), float64(after.TotalAlloc-before.TotalAlloc) / float64(runs)}
}

// medianOf returns the median of vs, which it sorts; the mean of the
// middle two of an even count, 0 for none.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	m := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[m]
	}
	return (vs[m-1] + vs[m]) / 2
}
