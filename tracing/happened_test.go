package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// chats returns the chat spans' count.
func chats(h *otelHarness) int {
	n := 0
	for _, s := range h.ended() {
		if strings.HasPrefix(s.Name(), "chat") {
			n++
		}
	}
	return n
}

// modelCallsMeasured returns how many model calls the duration histogram
// counted.
func modelCallsMeasured(t *testing.T, h *otelHarness) uint64 {
	t.Helper()
	hist, ok := h.metrics(t)["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	if !ok {
		return 0
	}
	var n uint64
	for _, p := range hist.DataPoints {
		n += p.Count
	}
	return n
}

// TestTracingRecordsOnlyCallsThatHappened is issue 34 point 6: a blocking
// input guardrail that trips before the model call leaves no chat span and
// no model-call measurement for the call it prevented; with a parallel
// input guardrail the call does happen, and is recorded.
func TestTracingRecordsOnlyCallsThatHappened(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		parallel bool
		want     int
	}{{"blocking", false, 0}, {"parallel", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			var opts []guardrails.Option
			if tc.parallel {
				opts = append(opts, guardrails.WithParallel())
			}
			trip := guardrails.Input(func(context.Context, *pipeline.Agent, []state.Item) (guardrails.Verdict, error) {
				return guardrails.Trip("a card number"), nil
			}, opts...)
			r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(), trip))
			_, err := r.Run(context.Background(), toolAgent(scripted.Reply("never")), pipeline.UserInput("4111"))
			if !errors.Is(err, pipeline.ErrInputRejected) {
				t.Fatalf("Run error = %v, want ErrInputRejected", err)
			}
			if n := chats(h); n != tc.want {
				t.Errorf("%d chat spans, want %d", n, tc.want)
			}
			if n := modelCallsMeasured(t, h); n != uint64(tc.want) {
				t.Errorf("%d model calls measured, want %d", n, tc.want)
			}
			one(t, h.ended(), "turn")
		})
	}
}

// TestNestedRunCarriesSessionID: an agent used as a tool runs a nested run
// without a session of its own; its spans carry the outer run's session ID
// as gen_ai.conversation.id all the same.
func TestNestedRunCarriesSessionID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	inner := &pipeline.Agent{Name: "researcher", Model: scripted.New(scripted.Reply("found")), Settings: pipeline.ModelSettings{Model: "gpt-test"}}
	outer := &pipeline.Agent{
		Name:     "boss",
		Model:    scripted.New(scripted.CallTool("researcher", `{"input":"look"}`), scripted.Reply("done")),
		Settings: pipeline.ModelSettings{Model: "gpt-test"},
		Tools:    []pipeline.Tool{pipeline.AgentTool(inner)},
	}
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	if _, err := r.Run(context.Background(), outer, pipeline.UserInput("hi"), pipeline.WithSessionID("conv_7")); err != nil {
		t.Fatal(err)
	}
	if n := len(find(h.ended(), "invoke_agent researcher")); n != 1 {
		t.Fatalf("%d nested run spans, want 1", n)
	}
	for _, s := range h.ended() {
		if !strings.HasPrefix(s.Name(), "invoke_agent") && !strings.HasPrefix(s.Name(), "chat") {
			continue
		}
		if got := attrs(s.Attributes())["gen_ai.conversation.id"]; got != "conv_7" {
			t.Errorf("span %q: gen_ai.conversation.id = %q, want conv_7", s.Name(), got)
		}
	}
}

// TestNestedTripCountedOnce: a nested run's guardrail results, which the
// outer run's state also records (tagged with their owner), are recorded
// by the nested run's spans and counted once, not again on the outer
// turn.
func TestNestedTripCountedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	inner := &pipeline.Agent{Name: "researcher", Model: scripted.New(scripted.Reply("the SECRET plan"))}
	outer := &pipeline.Agent{
		Name:  "boss",
		Model: scripted.New(scripted.CallTool("researcher", `{"input":"look"}`), scripted.Reply("done")),
		Tools: []pipeline.Tool{pipeline.AgentTool(inner)},
	}
	noSecret := guardrails.Output(func(_ context.Context, _ *pipeline.Agent, out string) (guardrails.Verdict, error) {
		if strings.Contains(out, "SECRET") {
			return guardrails.Trip("secret"), nil
		}
		return guardrails.Verdict{}, nil
	}, guardrails.WithName("no_secret"))
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(), noSecret))
	if _, err := r.Run(context.Background(), outer, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	trips, _ := h.metrics(t)["turnkit.guardrail.trips"].(metricdata.Sum[int64])
	var n int64
	for _, p := range trips.DataPoints {
		n += p.Value
	}
	if n != 1 {
		t.Errorf("%d trips counted, want 1", n)
	}
	events := 0
	for _, s := range find(h.ended(), "turn") {
		for _, e := range s.Events() {
			if e.Name == "turnkit.guardrail" && attrs(e.Attributes)["turnkit.guardrail.tripped"] == "true" {
				events++
			}
		}
	}
	if events != 1 {
		t.Errorf("%d tripped guardrail events on turn spans, want 1", events)
	}
}
