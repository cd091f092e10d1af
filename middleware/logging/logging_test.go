package logging_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// entry is a log entry reduced to what the tests compare.
type entry struct {
	Level   zapcore.Level
	Message string
	Fields  map[string]any
}

func observe(level zapcore.Level) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(level)
	return zap.New(core), logs
}

// entries returns the logged entries; fields named in drop are left out
// (durations, which vary).
func entries(logs *observer.ObservedLogs, drop ...string) []entry {
	var out []entry
	for _, e := range logs.AllUntimed() {
		fields := e.ContextMap()
		for _, k := range drop {
			delete(fields, k)
		}
		out = append(out, entry{Level: e.Level, Message: e.Message, Fields: fields})
	}
	return out
}

func echo(name string) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(_ context.Context, args json.RawMessage) (string, error) {
		return "echo:" + string(args), nil
	})
}

func agent(steps ...scripted.Step) *pipeline.Agent {
	return &pipeline.Agent{
		Name: "helper", Model: scripted.New(steps...), Settings: pipeline.ModelSettings{Model: "gpt-test"},
		Tools: []pipeline.Tool{echo("echo"), echo("danger")},
	}
}

// fixedClock advances by one second on every reading, so durations are
// known.
func fixedClock() func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func TestRunEvents(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.DebugLevel)
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger)))
	a := agent(scripted.CallTool("echo", `{"x":1}`), scripted.Reply("done"))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithRunID("run-1"), pipeline.WithSessionID("s-1")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []entry{
		{zap.DebugLevel, "run started", map[string]any{"run_id": "run-1", "agent": "helper", "resumed": false, "streaming": false, "session_id": "s-1"}},
		{zap.DebugLevel, "model call", map[string]any{"run_id": "run-1", "turn": int64(1), "agent": "helper", "model": "gpt-test", "input_items": int64(1),
			"response_id": "resp_run-1_1", "response_model": "scripted", "input_tokens": int64(1), "output_tokens": int64(1)}},
		{zap.DebugLevel, "tool call", map[string]any{"run_id": "run-1", "turn": int64(1), "tool": "echo", "call_id": "call_run-1_1_1", "status": "completed"}},
		{zap.DebugLevel, "turn finished", map[string]any{"run_id": "run-1", "turn": int64(1), "agent": "helper", "resumed": false, "next": "run_again", "calls": int64(1)}},
		{zap.DebugLevel, "model call", map[string]any{"run_id": "run-1", "turn": int64(2), "agent": "helper", "model": "gpt-test", "input_items": int64(3),
			"response_id": "resp_run-1_2", "response_model": "scripted", "input_tokens": int64(3), "output_tokens": int64(1)}},
		{zap.DebugLevel, "turn finished", map[string]any{"run_id": "run-1", "turn": int64(2), "agent": "helper", "resumed": false, "next": "final_output", "calls": int64(0)}},
		{zap.InfoLevel, "run finished", map[string]any{"run_id": "run-1", "agent": "helper", "outcome": "final_output", "turns": int64(2), "input_tokens": int64(4), "output_tokens": int64(2)}},
	}
	if diff := cmp.Diff(want, entries(logs, "duration")); diff != "" {
		t.Fatalf("log mismatch (-want +got):\n%s", diff)
	}
}

func TestPayloads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []logging.Option
		want map[string]any
	}{
		{name: "off by default", want: map[string]any{"run_id": "r", "turn": int64(1), "tool": "echo", "call_id": "call_r_1_1", "status": "completed"}},
		{name: "with payloads", opts: []logging.Option{logging.WithPayloads()}, want: map[string]any{
			"run_id": "r", "turn": int64(1), "tool": "echo", "call_id": "call_r_1_1", "status": "completed",
			"arguments": `{"secret":1}`, "output": `echo:{"secret":1}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logger, logs := observe(zap.DebugLevel)
			r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger, tt.opts...)))
			if _, err := r.Run(context.Background(), agent(scripted.CallTool("echo", `{"secret":1}`), scripted.Reply("done")), pipeline.UserInput("hi"), pipeline.WithRunID("r")); err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := logs.FilterMessage("tool call").AllUntimed()
			if len(got) != 1 {
				t.Fatalf("%d tool call entries, want 1", len(got))
			}
			fields := got[0].ContextMap()
			delete(fields, "duration")
			if diff := cmp.Diff(tt.want, fields); diff != "" {
				t.Errorf("tool call fields mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDurationsUseTheClock(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.DebugLevel)
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger, logging.WithClock(fixedClock()))))
	if _, err := r.Run(context.Background(), agent(scripted.Reply("done")), pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := map[string]any{}
	for _, e := range logs.AllUntimed() {
		if d, ok := e.ContextMap()["duration"]; ok {
			got[e.Message] = d
		}
	}
	// Readings: run start 1, turn start 2, model start 3, model end 4,
	// turn end 5, run end 6.
	want := map[string]any{"model call": time.Second, "turn finished": 3 * time.Second, "run finished": 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("durations mismatch (-want +got):\n%s", diff)
	}
}

func TestTurnErrorLoggedOnce(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.DebugLevel)
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger)))
	boom := errors.New("upstream down")
	_, err := r.Run(context.Background(), agent(scripted.Fail(boom)), pipeline.UserInput("hi"), pipeline.WithRunID("r"))
	if re, ok := errors.AsType[*pipeline.RunError](err); !ok || re.Err != boom {
		t.Fatalf("Run error = %v, want %v unchanged inside the runner's *RunError", err, boom)
	}
	var withError []string
	for _, e := range logs.AllUntimed() {
		if _, ok := e.ContextMap()["error"]; ok {
			withError = append(withError, e.Message)
		}
	}
	if diff := cmp.Diff([]string{"turn failed"}, withError); diff != "" {
		t.Fatalf("entries carrying the error mismatch (-want +got):\n%s", diff)
	}
	failed := logs.FilterMessage("turn failed").AllUntimed()[0]
	if failed.Level != zap.ErrorLevel {
		t.Errorf("turn failed level = %v, want error", failed.Level)
	}
	want := []entry{{zap.InfoLevel, "run finished", map[string]any{"run_id": "r", "agent": "helper", "outcome": "error", "turns": int64(1), "input_tokens": int64(0), "output_tokens": int64(0)}}}
	if diff := cmp.Diff(want, entries(logs.FilterMessage("run finished"), "duration")); diff != "" {
		t.Errorf("run finished mismatch (-want +got):\n%s", diff)
	}
}

func TestRunErrorOutsideTurns(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.InfoLevel)
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger)), pipeline.WithMaxTurns(1))
	_, err := r.Run(context.Background(), agent(scripted.CallTool("echo", `{}`), scripted.Reply("late")), pipeline.UserInput("hi"))
	if !errors.Is(err, pipeline.ErrMaxTurns) {
		t.Fatalf("Run error = %v, want ErrMaxTurns", err)
	}
	got := logs.FilterMessage("run failed").AllUntimed()
	if len(got) != 1 || got[0].Level != zap.ErrorLevel {
		t.Fatalf("run failed entries = %+v, want one at error level", got)
	}
	if msg := got[0].ContextMap()["error"]; msg != err.Error() {
		t.Errorf("error field = %v, want %q", msg, err.Error())
	}
}

func TestGuardrailTripIsAWarning(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.InfoLevel)
	trip := guardrails.Input(func(context.Context, *pipeline.Agent, []state.Item) (guardrails.Verdict, error) {
		return guardrails.Trip("a secret"), nil
	}, guardrails.WithName("no_secrets"))
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger), trip))
	_, err := r.Run(context.Background(), agent(scripted.Reply("never")), pipeline.UserInput("sk-1"), pipeline.WithRunID("r"))
	if !errors.Is(err, pipeline.ErrInputRejected) {
		t.Fatalf("Run error = %v, want ErrInputRejected", err)
	}
	got := entries(logs, "duration", "error")
	want := []entry{
		{zap.WarnLevel, "guardrail tripped", map[string]any{"run_id": "r", "turn": int64(1), "guardrail": "no_secrets", "stage": "input"}},
		{zap.WarnLevel, "turn failed", map[string]any{"run_id": "r", "turn": int64(1), "agent": "helper"}},
		{zap.InfoLevel, "run finished", map[string]any{"run_id": "r", "agent": "helper", "outcome": "error", "turns": int64(1), "input_tokens": int64(0), "output_tokens": int64(0)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("log mismatch (-want +got):\n%s", diff)
	}
}

func TestToolGuardrailOnItsCall(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.DebugLevel)
	reject := guardrails.ToolInput(func(_ context.Context, _ *pipeline.Agent, c *pipeline.ToolCall) (guardrails.Verdict, error) {
		return guardrails.RejectCall("not now", nil), nil
	}, guardrails.WithName("args_ok"))
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger, logging.WithPayloads()), reject))
	if _, err := r.Run(context.Background(), agent(scripted.CallTool("echo", `{}`), scripted.Reply("ok")), pipeline.UserInput("hi"), pipeline.WithRunID("r")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []entry{{zap.DebugLevel, "guardrail passed", map[string]any{
		"run_id": "r", "turn": int64(1), "guardrail": "args_ok", "stage": "tool_input",
		"call_id": "call_r_1_1", "behavior": "reject", "message": "not now",
	}}}
	if diff := cmp.Diff(want, entries(logs.FilterMessage("guardrail passed"))); diff != "" {
		t.Fatalf("guardrail entries mismatch (-want +got):\n%s", diff)
	}
	if got := logs.FilterMessage("tool call").AllUntimed()[0].ContextMap()["status"]; got != "rejected" {
		t.Errorf("tool status = %v, want rejected", got)
	}
}

func TestApprovalEvents(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.InfoLevel)
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger), approval.Require(approval.ByTool("danger"))))
	a := agent(scripted.CallTool("danger", `{}`), scripted.Reply("done"))
	res, err := r.Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithRunID("r"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	run := res.State()
	if err := run.Reject("call_r_1_1", "too risky"); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	if _, err := r.Resume(context.Background(), a, run); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	want := []entry{
		{zap.InfoLevel, "approval requested", map[string]any{"run_id": "r", "turn": int64(1), "tool": "danger", "call_id": "call_r_1_1"}},
		{zap.InfoLevel, "run finished", map[string]any{"run_id": "r", "agent": "helper", "outcome": "interrupted", "turns": int64(1), "input_tokens": int64(1), "output_tokens": int64(1), "pending": int64(1)}},
		{zap.InfoLevel, "approval decision", map[string]any{"run_id": "r", "turn": int64(1), "tool": "danger", "call_id": "call_r_1_1", "verdict": "rejected", "always": false}},
		{zap.InfoLevel, "run finished", map[string]any{"run_id": "r", "agent": "helper", "outcome": "final_output", "turns": int64(2), "input_tokens": int64(3), "output_tokens": int64(1)}},
	}
	if diff := cmp.Diff(want, entries(logs, "duration")); diff != "" {
		t.Fatalf("log mismatch (-want +got):\n%s", diff)
	}
}

func TestToolFailureIsAWarning(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.WarnLevel)
	flaky := pipeline.NewTool(pipeline.ToolSpec{Name: "flaky"}, func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("disk full")
	})
	a := &pipeline.Agent{Name: "helper", Model: scripted.New(scripted.CallTool("flaky", `{}`), scripted.Reply("sorry")), Tools: []pipeline.Tool{flaky}}
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger)))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithRunID("r")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []entry{{zap.WarnLevel, "tool failed", map[string]any{"run_id": "r", "turn": int64(1), "tool": "flaky", "call_id": "call_r_1_1", "status": "completed", "error": "disk full"}}}
	if diff := cmp.Diff(want, entries(logs, "duration")); diff != "" {
		t.Fatalf("log mismatch (-want +got):\n%s", diff)
	}
}

func TestHandoff(t *testing.T) {
	t.Parallel()
	logger, logs := observe(zap.InfoLevel)
	billing := &pipeline.Agent{Name: "billing", Model: scripted.New(scripted.Reply("paid"))}
	triage := &pipeline.Agent{Name: "triage", Model: scripted.New(scripted.CallTool(pipeline.HandoffToolName("billing"), `{}`)), Handoffs: []pipeline.Handoff{{Agent: billing}}}
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(logger)))
	if _, err := r.Run(context.Background(), triage, pipeline.UserInput("refund"), pipeline.WithRunID("r")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []entry{{zap.InfoLevel, "handoff", map[string]any{"run_id": "r", "turn": int64(1), "from": "triage", "to": "billing"}}}
	if diff := cmp.Diff(want, entries(logs.FilterMessage("handoff"))); diff != "" {
		t.Fatalf("log mismatch (-want +got):\n%s", diff)
	}
	if got := logs.FilterMessage("run finished").AllUntimed()[0].ContextMap()["agent"]; got != "billing" {
		t.Errorf("run finished agent = %v, want the last agent, billing", got)
	}
}

func TestNilLogger(t *testing.T) {
	t.Parallel()
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(nil)))
	res, err := r.Run(context.Background(), agent(scripted.Reply("ok")), pipeline.UserInput("hi"))
	if err != nil || res.FinalOutput() != "ok" {
		t.Fatalf("Run = %v, %v; want ok with a nil logger", res, err)
	}
}
