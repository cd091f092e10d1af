package pipelinetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func noop(name string) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(context.Context, json.RawMessage) (string, error) { return name, nil })
}

type callView struct {
	Name, CallID   string
	Index          int
	Seq, OutputSeq int64
	Terminal       bool
	ToolName       string
}

func view(c *pipeline.ToolCall) callView {
	v := callView{Name: c.Name, CallID: c.CallID, Index: c.Index, Seq: c.Item.Seq(), OutputSeq: c.OutputSeq, Terminal: c.Terminal}
	if c.Tool != nil {
		v.ToolName = c.Tool.Spec().Name
	}
	return v
}

// placement is what the core's placing of a response decides, as a turn
// shows it to the tool stage.
type placement struct {
	Items    []string // the response's items, "seq kind name"
	Boundary state.Boundary
	Calls    []callView
	MayEnd   bool
}

func placed(t *pipeline.Turn) placement {
	p := placement{Boundary: t.Run.Response(), MayEnd: t.MayEndRun()}
	for _, it := range t.Response.Items {
		p.Items = append(p.Items, fmt.Sprintf("%d %s %s", it.Seq(), it.Kind(), it.Name()))
	}
	for _, c := range t.Calls {
		p.Calls = append(p.Calls, view(c))
	}
	return p
}

// TestNewTurnPlacesLikeTheRunner checks that a built turn has the
// positions, calls, boundary and MayEndRun that the runner gives the same
// response: the runner's model stage hands its response to NewTurn.
func TestNewTurnPlacesLikeTheRunner(t *testing.T) {
	tests := []struct {
		name string
		give scripted.Step
	}{
		{name: "message", give: scripted.Reply("done")},
		{name: "reasoning only", give: scripted.Respond(scripted.Think("hm"))},
		{name: "calls", give: scripted.CallTool("x", `{}`)},
		{name: "terminal call", give: scripted.Respond(scripted.Text("calling"), scripted.Call("y", `{"a":1}`))},
		{name: "handoff", give: scripted.Respond(scripted.Text("bye"), scripted.Call("transfer_to_other", `{}`))},
		{name: "custom call", give: scripted.Respond(scripted.Item(state.CustomCall("ctc_1", "call_c", "x", "free text")))},
		{
			name: "mixed",
			give: scripted.Respond(scripted.Think("hm"), scripted.Text("calling"), scripted.Call("x", `{}`),
				scripted.Call("transfer_to_other", `{}`), scripted.Call("y", `{"a":1}`)),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			other := &pipeline.Agent{Name: "Other", Model: scripted.New(scripted.Reply("hi"))}
			agent := func(m pipeline.Model) *pipeline.Agent {
				return &pipeline.Agent{
					Name: "a", Model: m, Tools: []pipeline.Tool{noop("x"), noop("y")},
					Handoffs: []pipeline.Handoff{{Agent: other}}, ToolUse: pipeline.StopAtTools("y"),
				}
			}
			var (
				response []state.Item // as the model stage returned it
				live     placement
			)
			spy := pipeline.Middleware{
				Turn: func(next pipeline.Handler) pipeline.Handler {
					return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
						err := next.ServeTurn(ctx, t)
						if t.Number == 1 {
							live = placed(t)
						}
						return err
					})
				},
				Model: func(next pipeline.Model) pipeline.Model {
					return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
						resp, err := next.Respond(ctx, c)
						if err == nil && c.Turn.Number == 1 {
							response = slices.Clone(resp.Items)
						}
						return resp, err
					})
				},
			}
			m := scripted.New(tt.give, scripted.Reply("again"))
			if _, err := pipeline.NewRunner(pipeline.WithMiddleware(spy)).Run(context.Background(), agent(m), pipeline.UserInput("hi"), pipeline.WithRunID("run_test")); err != nil {
				t.Fatal(err)
			}
			if len(response) == 0 || len(live.Items) == 0 {
				t.Fatalf("the spy missed turn 1: response %v, placement %+v", response, live)
			}

			turn := pipelinetest.NewTurn(t, pipelinetest.WithAgent(agent(nil)), pipelinetest.WithInput(state.UserMessage("hi")),
				pipelinetest.WithResponse(response...))
			if diff := cmp.Diff(live, placed(turn)); diff != "" {
				t.Errorf("placement (-runner +NewTurn):\n%s", diff)
			}
			if len(turn.Input) != 1 || turn.Input[0].Seq() != 1 {
				t.Errorf("Input = %v, want the user message at 1", turn.Input)
			}
		})
	}
}

func TestNewTurnDefaults(t *testing.T) {
	turn := pipelinetest.NewTurn(t)
	if turn.Number != 1 || turn.Run.ID() != "run_test" || turn.Agent.Name != "agent" || turn.Response != nil || turn.Streaming() {
		t.Errorf("NewTurn() = number %d run %q agent %q response %v streaming %v", turn.Number, turn.Run.ID(), turn.Agent.Name, turn.Response, turn.Streaming())
	}
	if turn.MayEndRun() {
		t.Errorf("a turn without a response may not end the run")
	}
	final := pipelinetest.NewTurn(t, pipelinetest.WithResponse(state.AssistantMessage("m", "done")))
	if !final.MayEndRun() {
		t.Errorf("a turn whose response is a message may end the run")
	}
	run := state.NewRun("r", "agent")
	runcore.SetTurn(run, 4)
	if n := pipelinetest.NewTurn(t, pipelinetest.WithRun(run)).Number; n != 5 {
		t.Errorf("Number = %d, want 5 after 4 turns", n)
	}
}

// TestWrapShortCircuits tests a middleware with the recorder as the core.
func TestWrapShortCircuits(t *testing.T) {
	deny := pipeline.Middleware{
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				if c.Name == "rm" {
					return &pipeline.ToolResult{Status: pipeline.ToolRejected, Output: "denied"}, nil
				}
				return next.CallTool(ctx, c)
			})
		},
	}
	rec := &pipelinetest.Recorder{}
	h := pipelinetest.Wrap(deny, rec)
	turn := pipelinetest.NewTurn(t, pipelinetest.WithResponse(
		state.ToolCall("fc_1", "call_1", "rm", `{}`), state.ToolCall("fc_2", "call_2", "ls", `{}`)))
	var got []pipeline.ToolResult
	for _, c := range turn.Calls {
		res, err := h.Tool.CallTool(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, *res)
	}
	want := []pipeline.ToolResult{{Status: pipeline.ToolRejected, Output: "denied"}, {Status: pipeline.ToolCompleted, Output: "ok"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	wantRec := []pipelinetest.ToolRecord{{Name: "ls", CallID: "call_2", Arguments: "{}", Index: 1, OutputSeq: 4}}
	if diff := cmp.Diff(wantRec, rec.ToolCalls()); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	// Nil stages pass straight to the recorder.
	if err := h.Turn.ServeTurn(context.Background(), turn); err != nil || turn.Next.Kind != pipeline.NextFinalOutput {
		t.Errorf("ServeTurn = %v, Next %v; want nil, final_output", err, turn.Next.Kind)
	}
	resp, err := h.Model.Respond(context.Background(), pipelinetest.NewModelCall(t, turn))
	if err != nil || len(resp.Items) != 1 || resp.Items[0].Text() != "ok" {
		t.Errorf("Respond = %v, %v; want the default response", resp, err)
	}
}

func TestRecorderAnswersAndErrors(t *testing.T) {
	boom := errors.New("boom")
	rec := &pipelinetest.Recorder{
		Next:     pipeline.NextStep{Kind: pipeline.NextRunAgain},
		Response: &pipeline.ModelResponse{ID: "r", Items: []state.Item{state.AssistantMessage("m", "hello")}},
		Result:   &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "42"},
	}
	turn := pipelinetest.NewTurn(t, pipelinetest.WithInput(state.UserMessage("q")), pipelinetest.WithResponse(state.ToolCall("f", "c", "t", "{}")))
	if err := rec.ServeTurn(context.Background(), turn); err != nil || turn.Next.Kind != pipeline.NextRunAgain {
		t.Errorf("ServeTurn: %v, %v", err, turn.Next.Kind)
	}
	resp, _ := rec.Respond(context.Background(), pipelinetest.NewModelCall(t, turn))
	resp.Items[0] = state.AssistantMessage("m", "changed")
	if rec.Response.Items[0].Text() != "hello" {
		t.Errorf("changing the returned response changed the recorder's")
	}
	res, _ := rec.CallTool(context.Background(), turn.Calls[0])
	res.Output = "changed"
	if rec.Result.Output != "42" {
		t.Errorf("changing the returned result changed the recorder's")
	}
	turns := rec.Turns()
	turns[0].Input[0] = state.UserMessage("x")
	if got := rec.Turns()[0].Input[0].Text(); got != "q" {
		t.Errorf("Turns() is not a copy: input now %q", got)
	}
	if got := rec.ModelCalls()[0].Input; len(got) != 2 {
		t.Errorf("model input = %v, want the user message and the response", got)
	}

	failing := &pipelinetest.Recorder{Err: boom}
	if err := failing.ServeTurn(context.Background(), turn); !errors.Is(err, boom) {
		t.Errorf("ServeTurn error = %v", err)
	}
	if _, err := failing.Respond(context.Background(), pipelinetest.NewModelCall(t, turn)); !errors.Is(err, boom) {
		t.Errorf("Respond error = %v", err)
	}
	if _, err := failing.CallTool(context.Background(), turn.Calls[0]); !errors.Is(err, boom) {
		t.Errorf("CallTool error = %v", err)
	}
}

func TestRecorderConcurrentUse(t *testing.T) {
	rec := &pipelinetest.Recorder{}
	turn := pipelinetest.NewTurn(t, pipelinetest.WithResponse(state.ToolCall("f", "c", "t", "{}")))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, _ = rec.CallTool(context.Background(), turn.Calls[0])
				_ = rec.ToolCalls()
			}
		})
	}
	wg.Wait()
	if n := len(rec.ToolCalls()); n != 400 {
		t.Errorf("recorded %d calls, want 400", n)
	}
}

func TestWithEvents(t *testing.T) {
	var log pipelinetest.EventLog
	turn := pipelinetest.NewTurn(t, pipelinetest.WithEvents(&log))
	if !turn.Streaming() {
		t.Fatal("a turn with an event log must stream")
	}
	turn.Emit(pipeline.TextDelta{ItemID: "m", Delta: "hi"})
	pipelinetest.NewModelCall(t, turn).Emit(pipeline.TextDelta{ItemID: "m", Delta: "there"})
	want := []pipeline.Event{pipeline.TextDelta{ItemID: "m", Delta: "hi"}, pipeline.TextDelta{ItemID: "m", Delta: "there"}}
	if diff := cmp.Diff(want, log.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestWrapRunStage tests a run middleware with the recorder as the core:
// Wrap builds the Run stage, and the recorder ends the run as Next says.
func TestWrapRunStage(t *testing.T) {
	errResumed := errors.New("no resuming")
	var seen []string
	refuse := pipeline.Middleware{
		Run: func(next pipeline.RunHandler) pipeline.RunHandler {
			return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
				seen = append(seen, c.Run.ID())
				if c.Resumed {
					return nil, errResumed
				}
				return next.ServeRun(ctx, c)
			})
		},
	}
	rec := &pipelinetest.Recorder{Next: pipeline.NextStep{Kind: pipeline.NextFinalOutput, Output: "done"}}
	h := pipelinetest.Wrap(refuse, rec)
	var log pipelinetest.EventLog
	call := pipelinetest.NewRunCall(t, pipelinetest.WithInput(state.UserMessage("hi")), pipelinetest.WithEvents(&log))
	res, err := h.Run.ServeRun(context.Background(), call)
	if err != nil || res.FinalOutput() != "done" || res.RunID() != "run_test" || res.LastAgent().Name != "agent" {
		t.Fatalf("ServeRun = %+v, %v; want the final output done of run_test", res, err)
	}
	if out, ok := call.Run.FinalOutput(); !ok || out != "done" {
		t.Errorf("run's final output = %q, %v; want done, finished", out, ok)
	}
	resumed := pipelinetest.NewRunCall(t, pipelinetest.WithRun(state.NewRun("r2", "agent")))
	resumed.Resumed = true
	if _, err := h.Run.ServeRun(context.Background(), resumed); !errors.Is(err, errResumed) {
		t.Errorf("resumed ServeRun error = %v, want the middleware's", err)
	}
	want := []pipelinetest.RunRecord{{RunID: "run_test", Agent: "agent", Input: []state.Item{state.UserMessage("hi")}, Streaming: true}}
	if diff := cmp.Diff(want, rec.Runs(), cmp.Comparer(func(a, b state.Item) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("recorded runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"run_test", "r2"}, seen); diff != "" {
		t.Errorf("middleware saw (-want +got):\n%s", diff)
	}
	// A nil Run stage passes straight to the recorder.
	if h := pipelinetest.Wrap(pipeline.Middleware{}, rec); h.Run != pipeline.RunHandler(rec) {
		t.Errorf("Wrap of a middleware without a Run stage: Run = %T, want the recorder", h.Run)
	}
}

func TestRecorderServeRunOutcomes(t *testing.T) {
	boom := errors.New("boom")
	pausedRun := state.NewRun("paused", "agent")
	runcore.AddPending(pausedRun, state.Approval{Tool: "rm", CallID: "call_1", Agent: "agent"})
	tests := []struct {
		name      string
		rec       *pipelinetest.Recorder
		run       *state.Run
		wantErr   error
		wantOut   string
		wantDone  bool
		wantPause int
	}{
		{name: "zero Next", rec: &pipelinetest.Recorder{}, run: state.NewRun("a", "agent"), wantDone: true},
		{name: "interruption", rec: &pipelinetest.Recorder{Next: pipeline.NextStep{Kind: pipeline.NextInterruption}}, run: pausedRun, wantPause: 1},
		{name: "run again", rec: &pipelinetest.Recorder{Next: pipeline.NextStep{Kind: pipeline.NextRunAgain}}, run: state.NewRun("b", "agent")},
		{name: "error", rec: &pipelinetest.Recorder{Err: boom}, run: state.NewRun("c", "agent"), wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.rec.ServeRun(context.Background(), pipelinetest.NewRunCall(t, pipelinetest.WithRun(tt.run)))
			if !errors.Is(err, tt.wantErr) || res == nil {
				t.Fatalf("ServeRun = %v, %v; want a result and %v", res, err, tt.wantErr)
			}
			out, done := tt.run.FinalOutput()
			if res.FinalOutput() != tt.wantOut || out != tt.wantOut || done != tt.wantDone || len(res.Interruptions()) != tt.wantPause {
				t.Errorf("result %q, run %q finished %v, %d interruptions; want %q, finished %v, %d",
					res.FinalOutput(), out, done, len(res.Interruptions()), tt.wantOut, tt.wantDone, tt.wantPause)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	turn := pipelinetest.NewTurn(t, pipelinetest.WithInput(state.UserMessage("hi")),
		pipelinetest.WithResponse(state.ToolCall("fc_1", "call_1", "x", `{}`)))
	back := pipelinetest.RoundTrip(t, turn.Run)
	eq := cmp.Comparer(func(a, b state.Item) bool { return a.Equal(b) })
	if diff := cmp.Diff(turn.Run.Items().Slice(), back.Items().Slice(), eq); diff != "" {
		t.Errorf("items (-live +decoded):\n%s", diff)
	}
	if back == turn.Run || back.Response() != turn.Run.Response() || back.Turn() != 1 {
		t.Errorf("decoded run: response %+v turn %d; want a new run with %+v, turn 1", back.Response(), back.Turn(), turn.Run.Response())
	}
	runcore.SetTurn(back, 7)
	if turn.Run.Turn() != 1 {
		t.Errorf("changing the decoded run changed the live one")
	}
}

func TestDrain(t *testing.T) {
	r := pipeline.NewRunner()
	a := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("hello"))}
	res, events, err := pipelinetest.Drain(r.Stream(context.Background(), a, pipeline.UserInput("hi")))
	if err != nil || res == nil || res.FinalOutput() != "hello" {
		t.Fatalf("Drain = %v, %v; want the final output hello", res, err)
	}
	if len(events) == 0 || slices.ContainsFunc(events, func(ev pipeline.Event) bool { _, ok := ev.(pipeline.RunCompleted); return ok }) {
		t.Errorf("events = %v, want the run's events without RunCompleted", events)
	}

	boom := errors.New("boom")
	failing := &pipeline.Agent{Name: "f", Model: scripted.New(scripted.Fail(boom))}
	res, _, err = pipelinetest.Drain(r.Stream(context.Background(), failing, pipeline.UserInput("hi"), pipeline.WithRunID("run_f")))
	if !errors.Is(err, boom) || res == nil || res.RunID() != "run_f" {
		t.Fatalf("Drain of a failing run = %v, %v; want the RunError's result and boom", res, err)
	}
	res, _, err = pipelinetest.Drain(r.Stream(context.Background(), nil, nil))
	if err == nil || res != nil {
		t.Errorf("Drain of a run that never started = %v, %v; want no result and an error", res, err)
	}
}
