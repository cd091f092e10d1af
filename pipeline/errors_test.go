package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// failedRun runs or streams agent to its error and returns the result the
// mode hands out beside it: Run's own result, or for a stream the one the
// error carries.
func failedRun(t *testing.T, stream bool, r *pipeline.Runner, agent *pipeline.Agent) (*pipeline.Result, error) {
	t.Helper()
	ctx := context.Background()
	if !stream {
		return r.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithRunID("run_f"))
	}
	var last error
	for ev, err := range r.Stream(ctx, agent, pipeline.UserInput("go"), pipeline.WithRunID("run_f")) {
		if err != nil {
			last = err
			continue
		}
		if _, ok := ev.(pipeline.RunCompleted); ok {
			t.Fatal("the stream completed, want an error")
		}
	}
	re, ok := errors.AsType[*pipeline.RunError](last)
	if !ok {
		t.Fatalf("stream error %v (%T) is not a *pipeline.RunError", last, last)
	}
	return re.Result(), last
}

// TestFailedRunKeepsItsState fails runs in both modes, with no state made
// beforehand (no WithState): the error carries the resumable state, which
// is detached, agrees with Run's result, and resumes to the end (issue 13,
// items 6 and 7).
func TestFailedRunKeepsItsState(t *testing.T) {
	down := errors.New("model down")
	diskFull := errors.New("disk full")
	tests := []struct {
		name      string
		opts      []pipeline.Option
		steps     []scripted.Step
		cause     error
		wantItems []string
	}{
		{
			name:      "model error after a tool turn",
			steps:     []scripted.Step{scripted.CallTool("x", `1`), scripted.Fail(down), scripted.Reply("done")},
			cause:     down,
			wantItems: []string{"user_message:go", "tool_call:1", "tool_output:x(1)"},
		},
		{
			name:      "tool error aborts",
			opts:      []pipeline.Option{pipeline.WithToolErrorsAbort()},
			steps:     []scripted.Step{scripted.Respond(scripted.Text("trying"), scripted.Call("f", `2`)), scripted.Reply("done")},
			cause:     diskFull,
			wantItems: []string{"user_message:go", "assistant_message:trying", "tool_call:2"},
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name + "/run"
			if stream {
				name = tt.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				failures := 0
				flaky := pipeline.NewTool(pipeline.ToolSpec{Name: "f"}, func(context.Context, json.RawMessage) (string, error) {
					if failures++; failures == 1 {
						return "", diskFull
					}
					return "saved", nil
				})
				tools := []pipeline.Tool{echo("x"), flaky}
				agent := &pipeline.Agent{Name: "a", Tools: tools, Model: scripted.New(tt.steps...)}
				r := pipeline.NewRunner(tt.opts...)
				res, err := failedRun(t, stream, r, agent)
				if !errors.Is(err, tt.cause) {
					t.Fatalf("err = %v, want %v", err, tt.cause)
				}
				sc, ok := errors.AsType[interface {
					error
					State() *state.Run
				}](err)
				if !ok {
					t.Fatalf("err %v (%T) carries no state", err, err)
				}
				re, ok := errors.AsType[*pipeline.RunError](err)
				if !ok || re.RunID != "run_f" {
					t.Fatalf("RunError = %+v, want one with RunID run_f", re)
				}
				if err.Error() != re.Err.Error() {
					t.Errorf("message %q, want the cause's %q", err.Error(), re.Err.Error())
				}
				st, ok := pipeline.StateOf(err)
				if !ok {
					t.Fatal("StateOf found no state")
				}
				if diff := cmp.Diff(tt.wantItems, texts(st.Items().Slice())); diff != "" {
					t.Errorf("state items (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantItems, texts(res.NewItems())); diff != "" {
					t.Errorf("result items (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(views(res.State().Items().Slice()), views(st.Items().Slice())); diff != "" {
					t.Errorf("StateOf and the result's state differ (-result +error):\n%s", diff)
				}

				// Detached: a copy per call, sharing nothing.
				st.SetExtension("probe", []byte(`1`))
				if again := sc.State(); again == st {
					t.Error("State returned the same *state.Run twice")
				} else if _, found := again.Extension("probe"); found {
					t.Error("a change to one state handed out by the error reached the next one")
				}

				final, err := r.Resume(context.Background(), agent, st)
				if err != nil {
					t.Fatalf("Resume of the error's state: %v", err)
				}
				if final.FinalOutput() != "done" {
					t.Errorf("FinalOutput = %q, want done", final.FinalOutput())
				}
			})
		}
	}
}

// TestRunErrorSnapshot: the state an error carries is the state when the
// run failed, not the live state the caller kept with WithState and went
// on with.
func TestRunErrorSnapshot(t *testing.T) {
	down := errors.New("model down")
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Fail(down), scripted.Reply("done"))}
	r := pipeline.NewRunner()
	live := state.NewRun("run_s", "")
	_, err := r.Run(context.Background(), agent, pipeline.UserInput("go"), pipeline.WithState(live))
	if !errors.Is(err, down) {
		t.Fatalf("err = %v, want %v", err, down)
	}
	if _, err := r.Resume(context.Background(), agent, live); err != nil {
		t.Fatal(err)
	}
	st, ok := pipeline.StateOf(err)
	if !ok {
		t.Fatal("StateOf found no state")
	}
	if diff := cmp.Diff([]string{"user_message:go"}, texts(st.Items().Slice())); diff != "" {
		t.Errorf("the error's state followed the live run (-want +got):\n%s", diff)
	}
	if _, done := st.FinalOutput(); done {
		t.Error("the error's state is finished")
	}
}

// TestStartErrorsCarryNoState: an error returned before a run started has
// no state to carry.
func TestStartErrorsCarryNoState(t *testing.T) {
	_, err := pipeline.NewRunner().Run(context.Background(), nil, pipeline.UserInput("x"))
	if err == nil {
		t.Fatal("Run accepted a nil agent")
	}
	if _, ok := pipeline.StateOf(err); ok {
		t.Errorf("StateOf(%v) found a state", err)
	}
}

// TestNothingToResume: Resume refuses, with ErrNothingToResume as its doc
// says, a finished run and one that never started, and calls no model; a
// run that failed part way (it never paused) resumes (issue 13, item 9).
func TestNothingToResume(t *testing.T) {
	ctx := context.Background()
	r := pipeline.NewRunner()

	m := scripted.New(scripted.Reply("never"))
	fresh := state.NewRun("run_new", "a")
	if _, err := r.Resume(ctx, &pipeline.Agent{Name: "a", Model: m}, fresh); !errors.Is(err, pipeline.ErrNothingToResume) {
		t.Errorf("Resume of a run that never started = %v, want ErrNothingToResume", err)
	}
	if n := len(m.Calls()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	if fresh.Len() != 0 || fresh.Turn() != 0 {
		t.Errorf("the refused state changed: %d items, turn %d", fresh.Len(), fresh.Turn())
	}

	down := errors.New("model down")
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Fail(down), scripted.Reply("done"))}
	res, err := r.Run(ctx, agent, pipeline.UserInput("go"))
	if !errors.Is(err, down) {
		t.Fatalf("err = %v, want %v", err, down)
	}
	st := res.State()
	res, err = r.Resume(ctx, agent, st)
	if err != nil {
		t.Fatalf("Resume of a failed run that never paused: %v", err)
	}
	if res.FinalOutput() != "done" {
		t.Errorf("FinalOutput = %q, want done", res.FinalOutput())
	}
	if _, err := r.Resume(ctx, agent, st); !errors.Is(err, pipeline.ErrNothingToResume) {
		t.Errorf("Resume of a finished run = %v, want ErrNothingToResume", err)
	}
}

// TestSharedArgumentErrorIsNotEdited has two concurrent calls return one
// shared *ArgumentError without its tool and call ID. The core fills them
// in on a copy: the shared value stays as the tool made it (editing it in
// place is a data race that -race reports), and each call's output names
// its own call.
func TestSharedArgumentErrorIsNotEdited(t *testing.T) {
	shared := &pipeline.ArgumentError{Path: "$.n", Err: errors.New("not a number")}
	var (
		mu      sync.Mutex
		arrived int
		both    = make(chan struct{})
	)
	tool := pipeline.NewTool(pipeline.ToolSpec{Name: "t"}, func(ctx context.Context, _ json.RawMessage) (string, error) {
		mu.Lock()
		if arrived++; arrived == 2 {
			close(both)
		}
		mu.Unlock()
		select { // both calls are in flight before either returns
		case <-both:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "", shared
	})
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{tool}, Model: scripted.New(
		scripted.Respond(scripted.Call("t", `{"n":"x"}`), scripted.Call("t", `{"n":"y"}`)),
		scripted.Reply("done"))}
	res, err := pipeline.NewRunner(pipeline.WithInvalidCallsToModel()).Run(context.Background(), agent,
		pipeline.UserInput("go"), pipeline.WithRunID("r"))
	if err != nil {
		t.Fatal(err)
	}
	if shared.Tool != "" || shared.CallID != "" {
		t.Errorf("shared error edited: tool %q call %q, want both empty", shared.Tool, shared.CallID)
	}
	got := outputs(res.NewItems())
	want := []string{"call_r_1_1", "call_r_1_2"}
	if len(got) != len(want) {
		t.Fatalf("outputs = %q, want %d", got, len(want))
	}
	for i, id := range want {
		if !contains(got[i], "call "+id+":") || !contains(got[i], `tool "t"`) {
			t.Errorf("output %d = %q, want it to name tool t and call %s", i, got[i], id)
		}
	}
}

// TestErrorKindsMatchSentinels checks that every typed error of the
// package matches its sentinel with errors.Is, still matches its cause,
// and is found by errors.As through a wrapper.
func TestErrorKindsMatchSentinels(t *testing.T) {
	cause := errors.New("cause")
	tests := []struct {
		err      error
		sentinel error
		cause    error
		as       func(error) bool
	}{
		{&pipeline.MaxTurnsError{MaxTurns: 3}, pipeline.ErrMaxTurns, nil, asType[*pipeline.MaxTurnsError]},
		{&pipeline.UnknownToolError{Tool: "t"}, pipeline.ErrUnknownTool, nil, asType[*pipeline.UnknownToolError]},
		{&pipeline.ArgumentError{Tool: "t", Err: cause}, pipeline.ErrInvalidArguments, cause, asType[*pipeline.ArgumentError]},
		{&pipeline.ToolError{Tool: "t", Err: cause}, pipeline.ErrToolFailed, cause, asType[*pipeline.ToolError]},
		{&pipeline.ModelError{Status: 500, Err: cause}, pipeline.ErrModel, cause, asType[*pipeline.ModelError]},
		{&pipeline.PanicError{Stage: "tool", Value: cause}, pipeline.ErrPanic, cause, asType[*pipeline.PanicError]},
		{&pipeline.PanicError{Stage: "tool", Value: "boom"}, pipeline.ErrPanic, nil, asType[*pipeline.PanicError]},
		{&pipeline.UnknownAgentError{Agent: "x"}, pipeline.ErrUnknownAgent, nil, asType[*pipeline.UnknownAgentError]},
		{&pipeline.OutputError{Agent: "a", Err: cause}, pipeline.ErrInvalidOutput, cause, asType[*pipeline.OutputError]},
		{&pipeline.RefusalError{Agent: "a"}, pipeline.ErrRefused, nil, asType[*pipeline.RefusalError]},
		{&pipeline.OutputTypeError{Agent: "a"}, pipeline.ErrOutputType, nil, asType[*pipeline.OutputTypeError]},
	}
	for _, tt := range tests {
		wrapped := fmt.Errorf("outer: %w", tt.err)
		if !errors.Is(wrapped, tt.sentinel) {
			t.Errorf("%T: errors.Is(%v) = false", tt.err, tt.sentinel)
		}
		if tt.cause != nil && !errors.Is(wrapped, tt.cause) {
			t.Errorf("%T: does not match its cause", tt.err)
		}
		if !tt.as(wrapped) {
			t.Errorf("%T: errors.As through a wrapper failed", tt.err)
		}
	}
}

func asType[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}
