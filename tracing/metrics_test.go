package tracing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing"
)

// point is a data point reduced to what the tests compare.
type point struct {
	Attrs map[string]string
	Count uint64 // histogram count, or counter value
	Sum   float64
}

func points(t *testing.T, data metricdata.Aggregation) []point {
	t.Helper()
	var out []point
	switch d := data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, point{Attrs: attrs(p.Attributes.ToSlice()), Count: p.Count})
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			out = append(out, point{Attrs: attrs(p.Attributes.ToSlice()), Count: p.Count, Sum: float64(p.Sum)})
		}
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, point{Attrs: attrs(p.Attributes.ToSlice()), Count: uint64(p.Value)})
		}
	default:
		t.Fatalf("unexpected aggregation %T", data)
	}
	return out
}

var byAttrs = cmp.Transformer("sort", func(ps []point) map[string]point {
	m := make(map[string]point, len(ps))
	for _, p := range ps {
		m[fmt.Sprint(p.Attrs)] = p // fmt prints maps sorted by key
	}
	return m
})

func TestMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(tracing.WithProviderName("openai")), guard(false), requireApproval("danger")))
	a := toolAgent(
		scripted.Respond(scripted.Call("echo", `{}`), scripted.Call("danger", `{}`)).WithUsage(state.Usage{InputTokens: 100, OutputTokens: 7}),
		scripted.Reply("done").WithUsage(state.Usage{InputTokens: 120, OutputTokens: 3}),
	)
	res, err := r.Run(context.Background(), a, pipeline.UserInput("hi"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	run := res.State()
	decide(t, run, state.Approved)
	if _, err := r.Resume(context.Background(), a, run); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	// A run whose input guardrail trips, for the trip counter.
	r2 := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(tracing.WithProviderName("openai")), guard(true)))
	if _, err := r2.Run(context.Background(), toolAgent(scripted.Reply("never")), pipeline.UserInput("sk-1")); err == nil {
		t.Fatalf("tripped run returned no error")
	}

	got := h.metrics(t)
	chat := map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-test", "gen_ai.response.model": "scripted",
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name string
		want []point
	}{
		// The tripped run's model call never happened (the blocking input
		// guardrail refused it), so it is not measured.
		{"gen_ai.client.operation.duration", []point{
			{Attrs: chat, Count: 2},
		}},
		{"gen_ai.client.token.usage", []point{
			{Attrs: with(chat, "gen_ai.token.type", "input"), Count: 2, Sum: 220},
			{Attrs: with(chat, "gen_ai.token.type", "output"), Count: 2, Sum: 10},
		}},
		{"turnkit.tool.calls", []point{
			{Attrs: map[string]string{"gen_ai.tool.name": "echo", "turnkit.tool.status": "completed"}, Count: 1},
			{Attrs: map[string]string{"gen_ai.tool.name": "danger", "turnkit.tool.status": "pending"}, Count: 1},
			{Attrs: map[string]string{"gen_ai.tool.name": "danger", "turnkit.tool.status": "completed"}, Count: 1},
		}},
		{"turnkit.tool.duration", []point{
			{Attrs: map[string]string{"gen_ai.tool.name": "echo", "turnkit.tool.status": "completed"}, Count: 1},
			{Attrs: map[string]string{"gen_ai.tool.name": "danger", "turnkit.tool.status": "pending"}, Count: 1},
			{Attrs: map[string]string{"gen_ai.tool.name": "danger", "turnkit.tool.status": "completed"}, Count: 1},
		}},
		{"turnkit.guardrail.trips", []point{
			{Attrs: map[string]string{"turnkit.guardrail.name": "no_secrets", "turnkit.guardrail.stage": "input"}, Count: 1},
		}},
		{"turnkit.approvals", []point{
			{Attrs: map[string]string{"gen_ai.tool.name": "danger", "turnkit.approval.outcome": "requested"}, Count: 1},
			{Attrs: map[string]string{"gen_ai.tool.name": "danger", "turnkit.approval.outcome": "approved"}, Count: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, ok := got[tt.name]
			if !ok {
				t.Fatalf("no metric %s; have %v", tt.name, keys(got))
			}
			if diff := cmp.Diff(tt.want, points(t, data), byAttrs); diff != "" {
				t.Errorf("data points mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestMetricsWithoutTracer checks that metrics are recorded when no tracer
// records: the stages skip their spans, not their measurements.
func TestMetricsWithoutTracer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mw := tracing.Middleware(tracing.WithTracerProvider(noop.NewTracerProvider()), tracing.WithMeterProvider(h.mp))
	r := pipeline.NewRunner(pipeline.WithMiddleware(mw, guard(false)))
	if _, err := r.Run(context.Background(), toolAgent(scripted.CallTool("echo", `{}`), scripted.Reply("done")), pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := h.metrics(t)
	for _, name := range []string{"gen_ai.client.operation.duration", "gen_ai.client.token.usage", "turnkit.tool.calls", "turnkit.tool.duration"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no metric %s without a tracer; have %v", name, keys(got))
		}
	}
	if n := len(h.ended()); n != 0 {
		t.Errorf("%d spans recorded by the harness's provider, which the middleware was not given", n)
	}
}

// TestCountsWithoutTracer checks that the turn and tool stages, which pass
// a call straight on when no tracer records and no instrument is enabled,
// still count a guardrail's trip and an approval request when only the
// counters are enabled.
func TestCountsWithoutTracer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mw := tracing.Middleware(tracing.WithTracerProvider(noop.NewTracerProvider()), tracing.WithMeterProvider(h.mp))
	r := pipeline.NewRunner(pipeline.WithMiddleware(mw, guard(false), requireApproval("danger")))
	if _, err := r.Run(context.Background(), toolAgent(scripted.CallTool("danger", `{}`)), pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	r2 := pipeline.NewRunner(pipeline.WithMiddleware(mw, guard(true)))
	if _, err := r2.Run(context.Background(), toolAgent(scripted.Reply("never")), pipeline.UserInput("sk-1")); err == nil {
		t.Fatalf("tripped run returned no error")
	}
	got := h.metrics(t)
	for _, name := range []string{"turnkit.guardrail.trips", "turnkit.approvals"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no metric %s without a tracer; have %v", name, keys(got))
		}
	}
}
