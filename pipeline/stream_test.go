package pipeline_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"go.uber.org/goleak"
)

// snapshot is what a finished or failed run must agree on in both modes.
type snapshot struct {
	Items   []itemView
	Usage   state.Usage
	Turn    int
	Agent   string
	Final   string
	Done    bool
	Pending []state.Approval
	Err     string
}

func snap(run *state.Run, err error) snapshot {
	s := snapshot{Items: views(run.Items().Slice()), Usage: run.Usage(), Turn: run.Turn(), Agent: run.Agent(), Pending: run.Pending()}
	s.Final, s.Done = run.FinalOutput()
	if err != nil {
		s.Err = err.Error()
	}
	return s
}

type streamScenario struct {
	name string
	// pending is the number of calls the run ends waiting for.
	pending int
	opts    []pipeline.Option
	agent   func() *pipeline.Agent
}

func streamScenarios() []streamScenario {
	diskFull := errors.New("disk full")
	return []streamScenario{
		{name: "reply", agent: func() *pipeline.Agent {
			return &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("hello there, world"))}
		}},
		{name: "reasoning, message and parallel calls", agent: func() *pipeline.Agent {
			return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("x"), echo("y")}, Model: scripted.New(
				scripted.Respond(scripted.Think("plan"), scripted.Text("let me look"), scripted.Call("x", `1`), scripted.Call("y", `2`), scripted.Call("x", `3`)),
				scripted.Respond(scripted.Think("again"), scripted.Call("y", `4`)),
				scripted.Reply("all done now"),
			)}
		}},
		{name: "handoff", agent: func() *pipeline.Agent {
			b := &pipeline.Agent{Name: "B", Tools: []pipeline.Tool{echo("x")}, Model: scripted.New(scripted.CallTool("x", `{}`), scripted.Reply("B answers"))}
			return &pipeline.Agent{Name: "A", Handoffs: []pipeline.Handoff{{Agent: b}}, Model: scripted.New(
				scripted.Respond(scripted.Text("passing on"), scripted.Call("transfer_to_b", `{}`)),
			)}
		}},
		{name: "stop on first tool", agent: func() *pipeline.Agent {
			return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("x")}, ToolUse: pipeline.StopOnFirstTool(), Model: scripted.New(
				scripted.Respond(scripted.Call("x", `1`), scripted.Call("x", `2`)),
			)}
		}},
		{name: "tool error aborts", opts: []pipeline.Option{pipeline.WithToolErrorsAbort()}, agent: func() *pipeline.Agent {
			return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("x"), failing("f", diskFull)}, Model: scripted.New(
				scripted.Respond(scripted.Call("x", `1`), scripted.Call("f", `2`)),
			)}
		}},
		{name: "max turns", opts: []pipeline.Option{pipeline.WithMaxTurns(2)}, agent: loopingAgent},
		{name: "interruption", pending: 1, opts: []pipeline.Option{pipeline.WithMiddleware(holdTool("y"))}, agent: func() *pipeline.Agent {
			return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("x"), echo("y")}, Model: scripted.New(
				scripted.Respond(scripted.Text("two calls"), scripted.Call("x", `1`), scripted.Call("y", `2`)),
			)}
		}},
	}
}

// holdTool returns a middleware that makes calls to the named tool wait
// for a decision, as the approval middleware does.
func holdTool(name string) pipeline.Middleware {
	return pipeline.Middleware{Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			if c.Name == name {
				return &pipeline.ToolResult{Status: pipeline.ToolPending}, nil
			}
			return next.CallTool(ctx, c)
		})
	}}
}

// TestStreamAndRunAgree runs each scenario in both modes and compares the
// items, their order and the final state (invariant 13).
func TestStreamAndRunAgree(t *testing.T) {
	for _, sc := range streamScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			opts := append([]pipeline.Option{pipeline.WithIDGenerator(func() string { return "run_x" })}, sc.opts...)
			r := pipeline.NewRunner(opts...)

			runState := state.NewRun("run_x", "")
			res, runErr := r.Run(context.Background(), sc.agent(), pipeline.UserInput("go"), pipeline.WithState(runState))

			streamState := state.NewRun("run_x", "")
			var (
				created   []state.Item
				approvals []state.Approval
				deltas    strings.Builder
				streamRes *pipeline.Result
				streamErr error
				last      pipeline.Event
			)
			for ev, err := range r.Stream(context.Background(), sc.agent(), pipeline.UserInput("go"), pipeline.WithState(streamState)) {
				if err != nil {
					streamErr = err
					continue
				}
				last = ev
				switch e := ev.(type) {
				case pipeline.ItemCreated:
					created = append(created, e.Item)
				case pipeline.TextDelta:
					deltas.WriteString(e.Delta)
				case pipeline.ApprovalRequested:
					approvals = append(approvals, e.Approval)
				case pipeline.RunCompleted:
					streamRes = e.Result
				}
			}

			if diff := cmp.Diff(snap(runState, runErr), snap(streamState, streamErr)); diff != "" {
				t.Errorf("state (-run +stream):\n%s", diff)
			}
			if runErr != nil {
				if streamRes != nil {
					t.Errorf("the stream completed although the run failed with %v", runErr)
				}
				return
			}
			if _, ok := last.(pipeline.RunCompleted); !ok {
				t.Errorf("last event = %T, want RunCompleted", last)
			}
			if diff := cmp.Diff(views(res.NewItems()), views(streamRes.NewItems())); diff != "" {
				t.Errorf("NewItems (-run +stream):\n%s", diff)
			}
			if len(res.Interruptions()) != sc.pending {
				t.Errorf("%d interruptions, want %d", len(res.Interruptions()), sc.pending)
			}
			if diff := cmp.Diff(res.Interruptions(), streamRes.Interruptions()); diff != "" {
				t.Errorf("Interruptions (-run +stream):\n%s", diff)
			}
			if diff := cmp.Diff(res.Interruptions(), approvals); diff != "" {
				t.Errorf("ApprovalRequested events (-interruptions +events):\n%s", diff)
			}
			if res.FinalOutput() != streamRes.FinalOutput() {
				t.Errorf("FinalOutput: run %q, stream %q", res.FinalOutput(), streamRes.FinalOutput())
			}
			// Every recorded item was announced once; sorted by position
			// the announcements are the run's items.
			slices.SortFunc(created, func(a, b state.Item) int { return int(a.Seq() - b.Seq()) })
			if diff := cmp.Diff(views(res.NewItems()), views(created)); diff != "" {
				t.Errorf("ItemCreated events (-run items +events):\n%s", diff)
			}
			var text strings.Builder
			for _, it := range res.NewItems() {
				if it.Kind() == state.KindAssistantMessage {
					text.WriteString(it.Text())
				}
			}
			if deltas.String() != text.String() {
				t.Errorf("text deltas %q, want the messages' text %q", deltas.String(), text.String())
			}
		})
	}
}

// TestStreamEarlyBreak breaks out of a stream while a tool is running:
// the run stops, no goroutine is left, and the state kept with WithState
// resumes to the end.
func TestStreamEarlyBreak(t *testing.T) {
	defer goleak.VerifyNone(t)
	started := make(chan string, 1)
	calls := 0
	slow := blocking("slow", started)
	once := pipeline.Middleware{Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			calls++
			if calls > 1 { // on resume the tool answers at once
				return &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "slow result"}, nil
			}
			return next.CallTool(ctx, c)
		})
	}}
	a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{slow}, Model: scripted.New(
		scripted.Respond(scripted.Text("working"), scripted.Call("slow", `{}`)),
		scripted.Reply("finished"),
	)}
	r := pipeline.NewRunner(pipeline.WithMiddleware(once))
	run := state.NewRun("run_break", "a")
	var seen []string
	for ev, err := range r.Stream(context.Background(), a, pipeline.UserInput("go"), pipeline.WithState(run)) {
		if err != nil {
			t.Fatal(err)
		}
		if ic, ok := ev.(pipeline.ItemCreated); ok {
			seen = append(seen, ic.Item.Kind().String())
		}
		if _, ok := ev.(pipeline.ToolCallStarted); ok {
			<-started // the tool is running
			break
		}
	}
	goleak.VerifyNone(t)
	if diff := cmp.Diff([]string{"user_message", "assistant_message", "tool_call"}, seen); diff != "" {
		t.Errorf("events before the break (-want +got):\n%s", diff)
	}
	if got := texts(run.Items().Slice()); !cmp.Equal(got, []string{"user_message:go", "assistant_message:working", "tool_call:{}"}) {
		t.Errorf("state after the break = %q", got)
	}

	res, err := r.Resume(context.Background(), a, run)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user_message:go", "assistant_message:working", "tool_call:{}", "tool_output:slow result", "assistant_message:finished"}
	if diff := cmp.Diff(want, texts(res.State().Items().Slice())); diff != "" {
		t.Errorf("resumed run items (-want +got):\n%s", diff)
	}
	if res.FinalOutput() != "finished" {
		t.Errorf("FinalOutput = %q, want finished", res.FinalOutput())
	}
}

// TestStreamBreakRightAway breaks at the first event.
func TestStreamBreakRightAway(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Block())}
	n := 0
	for _, err := range pipeline.NewRunner().Stream(context.Background(), a, pipeline.UserInput("go")) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("got %d events, want 1", n)
	}
}

func TestStreamStartErrors(t *testing.T) {
	used := state.NewRun("used", "a")
	runcore.AddInput(used, state.UserMessage("x"))
	tests := []struct {
		name  string
		agent *pipeline.Agent
		opts  []pipeline.RunOption
		input []state.Item
	}{
		{"nil agent", nil, nil, pipeline.UserInput("x")},
		{"zero input item", &pipeline.Agent{Name: "a"}, nil, []state.Item{{}}},
		{"state with items", &pipeline.Agent{Name: "a"}, []pipeline.RunOption{pipeline.WithState(used)}, pipeline.UserInput("x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs []error
			for ev, err := range pipeline.NewRunner().Stream(context.Background(), tt.agent, tt.input, tt.opts...) {
				if ev != nil {
					t.Errorf("unexpected event %T", ev)
				}
				errs = append(errs, err)
			}
			if len(errs) != 1 || errs[0] == nil {
				t.Errorf("errors = %v, want exactly one", errs)
			}
			if _, err := pipeline.NewRunner().Run(context.Background(), tt.agent, tt.input, tt.opts...); err == nil {
				t.Errorf("Run accepted what Stream refused")
			}
		})
	}
}

// TestModelCallStreaming holds ModelCall.Streaming to whether the call's
// events reach a consumer: true in a streamed run, its attempts
// included; false in a plain run and for a call made outside a run,
// even one that asks for a stream.
func TestModelCallStreaming(t *testing.T) {
	type seen struct{ stream, streaming, attempt bool }
	var got []seen
	model := pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		got = append(got, seen{c.Stream, c.Streaming(), c.Attempt(nil).Streaming()})
		return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("", "done")}}, nil
	})
	a := &pipeline.Agent{Name: "a", Model: model}
	r := pipeline.NewRunner()
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("go")); err != nil {
		t.Fatal(err)
	}
	for _, err := range r.Stream(context.Background(), a, pipeline.UserInput("go")) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := model.Respond(context.Background(), &pipeline.ModelCall{Agent: a, Stream: true}); err != nil {
		t.Fatal(err)
	}
	want := []seen{{false, false, false}, {true, true, true}, {true, false, false}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("Stream, Streaming, an attempt's Streaming per call: plain run, streamed run, a call outside a run (-want +got):\n%s", diff)
	}
}
