package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing"
)

func toolAgent(steps ...scripted.Step) *pipeline.Agent {
	return &pipeline.Agent{
		Name:     "helper",
		Model:    scripted.New(steps...),
		Settings: pipeline.ModelSettings{Model: "gpt-test"},
		Tools:    []pipeline.Tool{echoTool("echo"), echoTool("danger")},
	}
}

func TestSpanTree(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	a := toolAgent(
		scripted.Respond(scripted.Text("calling"), scripted.Call("echo", `{"x":1}`), scripted.Call("echo", `{"x":2}`)),
		scripted.Reply("done"),
	)
	res, err := r.Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithSessionID("sess-1"), pipeline.WithRunID("run-1"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.FinalOutput() != "done" {
		t.Fatalf("FinalOutput = %q, want done", res.FinalOutput())
	}

	spans := h.ended()
	want := []node{{Name: "invoke_agent helper", Children: []node{
		{Name: "turn", Children: []node{{Name: "chat gpt-test"}, {Name: "execute_tool echo"}, {Name: "execute_tool echo"}}},
		{Name: "turn", Children: []node{{Name: "chat gpt-test"}}},
	}}}
	got := tree(spans)
	// The two tool calls run concurrently; their order among siblings is
	// not fixed, and both have the same name.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("span tree mismatch (-want +got):\n%s", diff)
	}
	for _, s := range spans {
		if s.Status().Code == codes.Error {
			t.Errorf("span %q has status Error: %s", s.Name(), s.Status().Description)
		}
		if s.InstrumentationScope().Name != tracing.ScopeName || s.InstrumentationScope().Version != tracing.Version {
			t.Errorf("span %q scope = %+v", s.Name(), s.InstrumentationScope())
		}
	}
}

// TestCacheUsageAttributes: a model call's span carries the tokens read
// from and written to the prompt cache, each under its GenAI key.
func TestCacheUsageAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	a := toolAgent(scripted.Reply("done").WithUsage(state.Usage{InputTokens: 5000, CachedTokens: 2048, CacheWriteTokens: 1024, OutputTokens: 3}))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]string{"gen_ai.usage.cache_read.input_tokens": "2048", "gen_ai.usage.cache_creation.input_tokens": "1024"}
	got := attrs(one(t, h.ended(), "chat gpt-test").Attributes())
	if diff := cmp.Diff(want, subset(got, want)); diff != "" {
		t.Errorf("attributes mismatch (-want +got):\n%s", diff)
	}
}

func TestSpanAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(tracing.WithProviderName("openai"))))
	a := toolAgent(scripted.CallTool("echo", `{"x":1}`), scripted.Reply("done"))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithSessionID("sess-1"), pipeline.WithRunID("run-1")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	spans := h.ended()
	chats := find(spans, "chat gpt-test")
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2", len(chats))
	}
	tests := []struct {
		name     string
		span     sdktrace.ReadOnlySpan
		wantKind trace.SpanKind
		want     map[string]string
	}{
		{
			name: "run", span: one(t, spans, "invoke_agent helper"), wantKind: trace.SpanKindInternal,
			want: map[string]string{
				"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper", "gen_ai.provider.name": "openai",
				"gen_ai.request.model": "gpt-test", "gen_ai.conversation.id": "sess-1", "turnkit.run.id": "run-1",
				"turnkit.run.resumed": "false", "turnkit.run.outcome": "final_output", "turnkit.run.turns": "2",
				"gen_ai.usage.input_tokens": "4", "gen_ai.usage.output_tokens": "2",
			},
		},
		{
			name: "first chat", span: chats[0], wantKind: trace.SpanKindClient,
			want: map[string]string{
				"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test",
				"gen_ai.response.id": "resp_run-1_1", "gen_ai.response.model": "scripted", "gen_ai.usage.input_tokens": "1",
				"gen_ai.usage.output_tokens": "1", "gen_ai.conversation.id": "sess-1", "gen_ai.output.type": "text",
				"gen_ai.request.stream": "false",
			},
		},
		{
			name: "tool", span: one(t, spans, "execute_tool echo"), wantKind: trace.SpanKindInternal,
			want: map[string]string{
				"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo", "gen_ai.tool.call.id": "call_run-1_1_1",
				"gen_ai.tool.type": "function", "gen_ai.tool.description": "echoes its arguments",
				"turnkit.tool.status": "completed", "gen_ai.agent.name": "helper",
			},
		},
		{
			name: "first turn", span: find(spans, "turn")[0], wantKind: trace.SpanKindInternal,
			want: map[string]string{"turnkit.turn.number": "1", "gen_ai.agent.name": "helper", "turnkit.turn.next": "run_again", "turnkit.turn.resumed": "false"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := attrs(tt.span.Attributes())
			if diff := cmp.Diff(tt.want, subset(got, tt.want)); diff != "" {
				t.Errorf("attributes mismatch (-want +got):\n%s", diff)
			}
			if tt.span.SpanKind() != tt.wantKind {
				t.Errorf("kind = %v, want %v", tt.span.SpanKind(), tt.wantKind)
			}
			for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.system_instructions"} {
				if v, ok := got[k]; ok {
					t.Errorf("content attribute %s = %q recorded without WithContentCapture", k, v)
				}
			}
		})
	}
}

func TestContentCapture(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(tracing.WithContentCapture())))
	a := toolAgent(scripted.CallTool("echo", `{"x":1}`), scripted.Reply("done"))
	a.Instructions = "be brief"
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithRunID("r")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	spans := h.ended()
	tool := attrs(one(t, spans, "execute_tool echo").Attributes())
	wantTool := map[string]string{"gen_ai.tool.call.arguments": `{"x":1}`, "gen_ai.tool.call.result": `echo:{"x":1}`}
	if diff := cmp.Diff(wantTool, subset(tool, wantTool)); diff != "" {
		t.Errorf("tool content mismatch (-want +got):\n%s", diff)
	}
	second := attrs(find(spans, "chat gpt-test")[1].Attributes())
	wantChat := map[string]string{
		"gen_ai.system_instructions": `[{"type":"text","content":"be brief"}]`,
		"gen_ai.input.messages": `[{"role":"user","parts":[{"type":"text","content":"hi"}]},` +
			`{"role":"assistant","parts":[{"type":"tool_call","id":"call_r_1_1","name":"echo","arguments":{"x":1}}]},` +
			`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_r_1_1","response":"echo:{\"x\":1}"}]}]`,
		"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]`,
	}
	if diff := cmp.Diff(wantChat, subset(second, wantChat)); diff != "" {
		t.Errorf("chat content mismatch (-want +got):\n%s", diff)
	}
	if _, ok := second["gen_ai.tool.definitions"]; !ok {
		t.Errorf("gen_ai.tool.definitions missing with content capture")
	}
}

func TestModelErrorIsRecordedOnEveryStage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	boom := &pipeline.ModelError{Status: 500, Err: errors.New("upstream down")}
	a := toolAgent(scripted.Fail(boom))
	_, err := r.Run(context.Background(), a, pipeline.UserInput("hi"))
	if !errors.Is(err, boom) {
		t.Fatalf("Run error = %v, want %v", err, boom)
	}
	spans := h.ended()
	for _, name := range []string{"chat gpt-test", "turn", "invoke_agent helper"} {
		s := one(t, spans, name)
		if s.Status().Code != codes.Error || s.Status().Description != boom.Error() {
			t.Errorf("%s: status = %+v, want Error %q", name, s.Status(), boom.Error())
		}
		if diff := cmp.Diff([]string{"exception"}, eventNames(s)); diff != "" {
			t.Errorf("%s: events mismatch (-want +got):\n%s", name, diff)
		}
		if got := attrs(s.Attributes())["error.type"]; got != "*pipeline.ModelError" {
			t.Errorf("%s: error.type = %q, want *pipeline.ModelError", name, got)
		}
	}
	if got := attrs(one(t, spans, "invoke_agent helper").Attributes())["turnkit.run.outcome"]; got != "error" {
		t.Errorf("run outcome = %q, want error", got)
	}
}

func TestToolErrorReportedToModel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	failing := pipeline.NewTool(pipeline.ToolSpec{Name: "flaky"}, func(context.Context, json.RawMessage) (string, error) {
		return "", context.DeadlineExceeded
	})
	a := &pipeline.Agent{Name: "helper", Model: scripted.New(scripted.CallTool("flaky", `{}`), scripted.Reply("sorry")), Tools: []pipeline.Tool{failing}}
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	spans := h.ended()
	tool := one(t, spans, "execute_tool flaky")
	if tool.Status().Code != codes.Error {
		t.Errorf("tool status = %+v, want Error", tool.Status())
	}
	if got := attrs(tool.Attributes())["error.type"]; got != "deadline_exceeded" {
		t.Errorf("error.type = %q, want deadline_exceeded", got)
	}
	if s := one(t, spans, "invoke_agent helper"); s.Status().Code == codes.Error {
		t.Errorf("run status = %+v: the run went on, it must not be an error", s.Status())
	}
}

func TestHandoffSpan(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	billing := &pipeline.Agent{Name: "billing", Model: scripted.New(scripted.Reply("paid"))}
	triage := &pipeline.Agent{
		Name:     "triage",
		Model:    scripted.New(scripted.CallTool(pipeline.HandoffToolName("billing"), `{}`)),
		Handoffs: []pipeline.Handoff{{Agent: billing}},
	}
	if _, err := r.Run(context.Background(), triage, pipeline.UserInput("refund"), pipeline.WithRunID("r")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	spans := h.ended()
	want := []node{{Name: "invoke_agent triage", Children: []node{
		{Name: "turn", Children: []node{{Name: "chat"}, {Name: "handoff billing"}}},
		{Name: "turn", Children: []node{{Name: "chat"}}},
	}}}
	if diff := cmp.Diff(want, tree(spans)); diff != "" {
		t.Fatalf("span tree mismatch (-want +got):\n%s", diff)
	}
	wantAttrs := map[string]string{
		"turnkit.handoff.from": "triage", "turnkit.handoff.to": "billing",
		"gen_ai.tool.name": "transfer_to_billing", "gen_ai.tool.call.id": "call_r_1_1",
	}
	got := attrs(one(t, spans, "handoff billing").Attributes())
	if diff := cmp.Diff(wantAttrs, subset(got, wantAttrs)); diff != "" {
		t.Errorf("handoff attributes mismatch (-want +got):\n%s", diff)
	}
	turns := find(spans, "turn")
	sortByStart(turns)
	if got := attrs(turns[1].Attributes())["gen_ai.agent.name"]; got != "billing" {
		t.Errorf("second turn agent = %q, want billing", got)
	}
}

func TestGuardrailEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(), guard(false)))
	a := toolAgent(scripted.CallTool("echo", `{}`), scripted.Reply("done"))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithRunID("r")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	spans := h.ended()
	turns := find(spans, "turn")
	sortByStart(turns)
	if diff := cmp.Diff([]string{"turnkit.guardrail"}, eventNames(turns[0])); diff != "" {
		t.Fatalf("first turn events mismatch (-want +got):\n%s", diff)
	}
	if got := eventNames(turns[1]); len(got) != 0 {
		t.Errorf("second turn events = %v, want none (its guardrails ran on turn 1 only)", got)
	}
	gotTurn := attrs(turns[0].Events()[0].Attributes)
	wantTurn := map[string]string{"turnkit.guardrail.name": "no_secrets", "turnkit.guardrail.stage": "input", "turnkit.guardrail.tripped": "false"}
	if diff := cmp.Diff(wantTurn, gotTurn); diff != "" {
		t.Errorf("input guardrail event mismatch (-want +got):\n%s", diff)
	}
	tool := one(t, spans, "execute_tool echo")
	if diff := cmp.Diff([]string{"turnkit.guardrail"}, eventNames(tool)); diff != "" {
		t.Fatalf("tool events mismatch (-want +got):\n%s", diff)
	}
	wantTool := map[string]string{
		"turnkit.guardrail.name": "args_ok", "turnkit.guardrail.stage": "tool_input", "turnkit.guardrail.tripped": "false",
		"turnkit.guardrail.behavior": "allow", "gen_ai.tool.call.id": "call_r_1_1",
	}
	if diff := cmp.Diff(wantTool, attrs(tool.Events()[0].Attributes)); diff != "" {
		t.Errorf("tool guardrail event mismatch (-want +got):\n%s", diff)
	}
}

func TestGuardrailTripwire(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(tracing.WithContentCapture()), guard(true)))
	a := toolAgent(scripted.Reply("never"))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("sk-123")); !errors.Is(err, pipeline.ErrInputRejected) {
		t.Fatalf("Run error = %v, want ErrInputRejected", err)
	}
	turn := one(t, h.ended(), "turn")
	if diff := cmp.Diff([]string{"turnkit.guardrail", "exception"}, eventNames(turn)); diff != "" {
		t.Fatalf("turn events mismatch (-want +got):\n%s", diff)
	}
	want := map[string]string{"turnkit.guardrail.name": "no_secrets", "turnkit.guardrail.tripped": "true"}
	if diff := cmp.Diff(want, subset(attrs(turn.Events()[0].Attributes), want)); diff != "" {
		t.Errorf("tripwire event mismatch (-want +got):\n%s", diff)
	}
	if turn.Status().Code != codes.Error {
		t.Errorf("turn status = %+v, want Error", turn.Status())
	}
}

func TestNilProviderIsIgnored(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mw := tracing.Middleware(tracing.WithTracerProvider(h.tp), tracing.WithTracerProvider(nil), tracing.WithMeterProvider(nil))
	r := pipeline.NewRunner(pipeline.WithMiddleware(mw))
	if _, err := r.Run(context.Background(), toolAgent(scripted.Reply("ok")), pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := len(h.ended()); got != 3 {
		t.Fatalf("%d spans, want 3: a nil provider must not replace the one set before", got)
	}
}

func TestNoopProviderSavesNothing(t *testing.T) {
	t.Parallel()
	mw := tracing.Middleware(tracing.WithTracerProvider(noop.NewTracerProvider()))
	r := pipeline.NewRunner(pipeline.WithMiddleware(mw, requireApproval("danger")))
	res, err := r.Run(context.Background(), toolAgent(scripted.CallTool("danger", `{}`)), pipeline.UserInput("hi"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := res.State().TraceContext(); got != nil {
		t.Fatalf("TraceContext = %v, want nil with a no-op provider", got)
	}
}

func TestStreamingRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	for _, err := range r.Stream(context.Background(), toolAgent(scripted.Reply("hello there")), pipeline.UserInput("hi")) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
	}
	spans := h.ended()
	for _, name := range []string{"invoke_agent helper", "chat gpt-test"} {
		if got := attrs(one(t, spans, name).Attributes())["gen_ai.request.stream"]; got != "true" {
			t.Errorf("%s: gen_ai.request.stream = %q, want true", name, got)
		}
	}
}
