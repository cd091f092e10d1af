package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"go.uber.org/goleak"
)

// TestShortCircuit checks that a middleware can answer for each inner
// stage without calling it.
func TestShortCircuit(t *testing.T) {
	tests := []struct {
		name      string
		mw        pipeline.Middleware
		final     string
		items     []string
		modelUsed int
		toolUsed  int
	}{
		{
			name: "turn",
			mw: pipeline.Middleware{Turn: func(next pipeline.Handler) pipeline.Handler {
				return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
					t.Next = pipeline.NextStep{Kind: pipeline.NextFinalOutput, Output: "cached answer"}
					return nil
				})
			}},
			final: "cached answer", items: []string{"user_message:hi"},
		},
		{
			name: "model",
			mw: pipeline.Middleware{Model: func(next pipeline.Model) pipeline.Model {
				return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
					return &pipeline.ModelResponse{ID: "cache", Items: []state.Item{state.AssistantMessage("m", "from cache")}}, nil
				})
			}},
			final: "from cache", items: []string{"user_message:hi", "assistant_message:from cache"},
		},
		{
			name: "tool",
			mw: pipeline.Middleware{Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
				return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
					return &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "stubbed"}, nil
				})
			}},
			final: "done", modelUsed: 2,
			items: []string{"user_message:hi", `tool_call:{"x":1}`, "tool_output:stubbed", "assistant_message:done"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toolUsed := 0
			tl := pipeline.NewTool(pipeline.ToolSpec{Name: "t"}, func(context.Context, json.RawMessage) (string, error) {
				toolUsed++
				return "real", nil
			})
			m := scripted.New(scripted.CallTool("t", `{"x":1}`), scripted.Reply("done"))
			a := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{tl}}
			res, err := pipeline.NewRunner(pipeline.WithMiddleware(tt.mw)).Run(context.Background(), a, pipeline.UserInput("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if res.FinalOutput() != tt.final {
				t.Errorf("FinalOutput = %q, want %q", res.FinalOutput(), tt.final)
			}
			if diff := cmp.Diff(tt.items, texts(res.NewItems())); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if n := len(m.Calls()); n != tt.modelUsed {
				t.Errorf("model called %d times, want %d", n, tt.modelUsed)
			}
			if toolUsed != tt.toolUsed {
				t.Errorf("tool called %d times, want %d", toolUsed, tt.toolUsed)
			}
		})
	}
}

func loopingAgent() *pipeline.Agent {
	return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("t")}, Model: scripted.Generate(func(int) scripted.Step {
		return scripted.CallTool("t", `{}`)
	})}
}

func TestMaxTurns(t *testing.T) {
	handlerErr := errors.New("handler failed")
	tests := []struct {
		name      string
		opts      []pipeline.Option
		runOpts   []pipeline.RunOption
		limit     int
		final     string
		wantErr   error
		wantTyped bool
	}{
		{name: "default", limit: pipeline.DefaultMaxTurns, wantErr: pipeline.ErrMaxTurns, wantTyped: true},
		{name: "runner option", opts: []pipeline.Option{pipeline.WithMaxTurns(3)}, limit: 3, wantErr: pipeline.ErrMaxTurns, wantTyped: true},
		{name: "run option wins", opts: []pipeline.Option{pipeline.WithMaxTurns(3)}, runOpts: []pipeline.RunOption{pipeline.WithRunMaxTurns(2)}, limit: 2, wantErr: pipeline.ErrMaxTurns, wantTyped: true},
		{name: "handler supplies a final output", limit: 2, final: "gave up after 2", opts: []pipeline.Option{
			pipeline.WithMaxTurns(2),
			pipeline.WithMaxTurnsHandler(func(ctx context.Context, run *state.Run, err *pipeline.MaxTurnsError) (string, bool, error) {
				return "gave up after " + string(rune('0'+err.MaxTurns)), true, nil
			}),
		}},
		{name: "handler declines", limit: 2, wantErr: pipeline.ErrMaxTurns, wantTyped: true, opts: []pipeline.Option{
			pipeline.WithMaxTurns(2),
			pipeline.WithMaxTurnsHandler(func(context.Context, *state.Run, *pipeline.MaxTurnsError) (string, bool, error) {
				return "", false, nil
			}),
		}},
		{name: "handler error", limit: 2, wantErr: handlerErr, opts: []pipeline.Option{
			pipeline.WithMaxTurns(2),
			pipeline.WithMaxTurnsHandler(func(context.Context, *state.Run, *pipeline.MaxTurnsError) (string, bool, error) {
				return "", false, handlerErr
			}),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := pipeline.NewRunner(tt.opts...).Run(context.Background(), loopingAgent(), pipeline.UserInput("go"), tt.runOpts...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantTyped {
				var mt *pipeline.MaxTurnsError
				if !errors.As(err, &mt) || mt.MaxTurns != tt.limit {
					t.Errorf("err = %#v, want *MaxTurnsError{MaxTurns: %d}", err, tt.limit)
				}
			}
			if res == nil {
				t.Fatal("nil result")
			}
			st := res.State()
			if st.Turn() != tt.limit {
				t.Errorf("turns = %d, want %d", st.Turn(), tt.limit)
			}
			final, done := st.FinalOutput()
			if res.FinalOutput() != tt.final || final != tt.final || done != (tt.final != "") {
				t.Errorf("final = %q/%q (done %v), want %q", res.FinalOutput(), final, done, tt.final)
			}
			// Every turn's call has its output: the state stays valid input.
			if n := len(outputs(st.Items().Slice())); n != tt.limit {
				t.Errorf("%d tool outputs, want %d", n, tt.limit)
			}
		})
	}
}

// runAsync runs f in a goroutine and returns a channel for its error.
func runAsync(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not return after its context was cancelled")
		return nil
	}
}

func TestCancelDuringModelCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	entered := make(chan struct{})
	signal := pipeline.Middleware{Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			close(entered)
			return next.Respond(ctx, c)
		})
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := state.NewRun("run_cancel", "a")
	a := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Block())}
	done := runAsync(func() error {
		_, err := pipeline.NewRunner(pipeline.WithMiddleware(signal)).Run(ctx, a, pipeline.UserInput("hi"), pipeline.WithState(run))
		return err
	})
	<-entered
	cancel()
	if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"user_message:hi"}, texts(run.Items().Slice())); diff != "" {
		t.Errorf("a cancelled model call recorded output (-want +got):\n%s", diff)
	}
}

func TestCancelDuringTools(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, n := range []int{1, 3} {
		t.Run(string(rune('0'+n))+" calls", func(t *testing.T) {
			started := make(chan string, n)
			var parts []scripted.Part
			for i := range n {
				parts = append(parts, scripted.Call("wait", `{"i":`+string(rune('0'+i))+`}`))
			}
			a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{blocking("wait", started)}, Model: scripted.New(scripted.Respond(parts...))}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			run := state.NewRun("run_cancel", "a")
			done := runAsync(func() error {
				_, err := pipeline.NewRunner().Run(ctx, a, pipeline.UserInput("hi"), pipeline.WithState(run))
				return err
			})
			for range n {
				<-started
			}
			cancel()
			if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if got := outputs(run.Items().Slice()); len(got) != 0 {
				t.Errorf("cancelled calls recorded outputs %q", got)
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	m := func() *scripted.Model { return scripted.New(scripted.CallTool("nope", `{}`), scripted.Reply("sorry")) }
	res, err := pipeline.NewRunner().Run(context.Background(), &pipeline.Agent{Name: "a", Model: m()}, pipeline.UserInput("hi"), pipeline.WithRunID("r"))
	var ut *pipeline.UnknownToolError
	if !errors.As(err, &ut) || !errors.Is(err, pipeline.ErrUnknownTool) {
		t.Fatalf("err = %v, want *UnknownToolError", err)
	}
	if ut.Agent != "a" || ut.Tool != "nope" || ut.CallID != "call_r_1_1" {
		t.Errorf("err = %+v, want agent a, tool nope, call call_r_1_1", ut)
	}
	if res == nil || res.State().Len() != 2 {
		t.Errorf("state after the error should hold the input and the call")
	}

	res, err = pipeline.NewRunner(pipeline.WithInvalidCallsToModel()).Run(context.Background(), &pipeline.Agent{Name: "a", Model: m()}, pipeline.UserInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got := outputs(res.NewItems()); len(got) != 1 || !contains(got[0], `has no tool "nope"`) {
		t.Errorf("outputs = %q, want the unknown tool reported to the model", got)
	}
	if res.FinalOutput() != "sorry" {
		t.Errorf("FinalOutput = %q, want sorry", res.FinalOutput())
	}
}

func TestMalformedArguments(t *testing.T) {
	m := func() *scripted.Model {
		return scripted.New(scripted.CallTool("t", `{"a":1,`), scripted.Reply("sorry"))
	}
	agent := func() *pipeline.Agent {
		return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("t")}, Model: m()}
	}
	_, err := pipeline.NewRunner().Run(context.Background(), agent(), pipeline.UserInput("hi"), pipeline.WithRunID("r"))
	var ae *pipeline.ArgumentError
	if !errors.As(err, &ae) || !errors.Is(err, pipeline.ErrInvalidArguments) {
		t.Fatalf("err = %v, want *ArgumentError", err)
	}
	if ae.Tool != "t" || ae.CallID != "call_r_1_1" || ae.Offset != 7 {
		t.Errorf("err = %+v, want tool t, call call_r_1_1, offset 7", ae)
	}

	res, err := pipeline.NewRunner(pipeline.WithInvalidCallsToModel()).Run(context.Background(), agent(), pipeline.UserInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got := outputs(res.NewItems()); len(got) != 1 || !contains(got[0], "offset 7") || !contains(got[0], `tool "t"`) {
		t.Errorf("outputs = %q, want the argument error reported to the model", got)
	}
}

func TestToolErrors(t *testing.T) {
	diskFull := errors.New("disk full")
	agent := func() *pipeline.Agent {
		return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{failing("save", diskFull)}, Model: scripted.New(
			scripted.CallTool("save", `{}`), scripted.Reply("could not save"),
		)}
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent(), pipeline.UserInput("save it"))
	if err != nil {
		t.Fatalf("a tool error must go to the model by default, got %v", err)
	}
	if got := outputs(res.NewItems()); len(got) != 1 || !contains(got[0], "disk full") {
		t.Errorf("outputs = %q, want the error text", got)
	}

	res, err = pipeline.NewRunner(pipeline.WithToolErrorText(func(c *pipeline.ToolCall, err error) string {
		return c.Name + " failed: " + err.Error()
	})).Run(context.Background(), agent(), pipeline.UserInput("save it"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"save failed: disk full"}, outputs(res.NewItems())); diff != "" {
		t.Errorf("custom error text (-want +got):\n%s", diff)
	}

	res, err = pipeline.NewRunner(pipeline.WithToolErrorsAbort()).Run(context.Background(), agent(), pipeline.UserInput("save it"), pipeline.WithRunID("r"))
	var te *pipeline.ToolError
	if !errors.As(err, &te) || !errors.Is(err, diskFull) || te.Tool != "save" || te.CallID != "call_r_1_1" {
		t.Fatalf("err = %v, want *ToolError for save call_r_1_1 wrapping disk full", err)
	}
	if got := outputs(res.State().Items().Slice()); len(got) != 0 {
		t.Errorf("an aborted call recorded an output: %q", got)
	}
}

func TestScriptExhausted(t *testing.T) {
	a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("t")}, Model: scripted.New(scripted.CallTool("t", `{}`))}
	_, err := pipeline.NewRunner().Run(context.Background(), a, pipeline.UserInput("hi"))
	var ee *scripted.ExhaustedError
	if !errors.As(err, &ee) || !errors.Is(err, scripted.ErrScriptExhausted) {
		t.Fatalf("err = %v, want *scripted.ExhaustedError", err)
	}
	if ee.Steps != 1 || ee.Call != 2 {
		t.Errorf("err = %+v, want Steps 1, Call 2", ee)
	}
}

func TestToolUseBehavior(t *testing.T) {
	decideErr := errors.New("cannot decide")
	tests := []struct {
		name      string
		use       pipeline.ToolUseBehavior
		steps     []scripted.Step
		final     string
		err       error
		modelUsed int
	}{
		{
			name: "run again", use: pipeline.RunAgain(),
			steps: []scripted.Step{scripted.CallTool("a", `1`), scripted.Reply("done")}, final: "done", modelUsed: 2,
		},
		{
			name: "stop on first tool", use: pipeline.StopOnFirstTool(),
			steps: []scripted.Step{scripted.Respond(scripted.Call("a", `1`), scripted.Call("b", `2`))}, final: "a(1)", modelUsed: 1,
		},
		{
			name: "stop at named tool", use: pipeline.StopAtTools("b"),
			steps: []scripted.Step{scripted.Respond(scripted.Call("a", `1`), scripted.Call("b", `2`))}, final: "b(2)", modelUsed: 1,
		},
		{
			name: "stop at names, other tool runs again", use: pipeline.StopAtTools("b"),
			steps: []scripted.Step{scripted.CallTool("a", `1`), scripted.Reply("done")}, final: "done", modelUsed: 2,
		},
		{
			name: "custom decider", modelUsed: 1, final: "a(1)+b(2)",
			use: pipeline.DecideToolUse(func(ctx context.Context, t *pipeline.Turn, out []pipeline.ToolOutcome) (string, bool, error) {
				return out[0].Result.Output + "+" + out[1].Result.Output, true, nil
			}),
			steps: []scripted.Step{scripted.Respond(scripted.Call("a", `1`), scripted.Call("b", `2`))},
		},
		{
			name: "custom decider goes on", modelUsed: 2, final: "done",
			use: pipeline.DecideToolUse(func(context.Context, *pipeline.Turn, []pipeline.ToolOutcome) (string, bool, error) {
				return "", false, nil
			}),
			steps: []scripted.Step{scripted.CallTool("a", `1`), scripted.Reply("done")},
		},
		{
			name: "custom decider error", modelUsed: 1, err: decideErr,
			use: pipeline.DecideToolUse(func(context.Context, *pipeline.Turn, []pipeline.ToolOutcome) (string, bool, error) {
				return "", false, decideErr
			}),
			steps: []scripted.Step{scripted.CallTool("a", `1`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := scripted.New(tt.steps...)
			a := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{echo("a"), echo("b")}, ToolUse: tt.use}
			res, err := pipeline.NewRunner().Run(context.Background(), a, pipeline.UserInput("go"))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if res.FinalOutput() != tt.final {
				t.Errorf("FinalOutput = %q, want %q", res.FinalOutput(), tt.final)
			}
			if n := len(m.Calls()); n != tt.modelUsed {
				t.Errorf("model called %d times, want %d", n, tt.modelUsed)
			}
			if tt.err == nil {
				if got, _ := res.State().FinalOutput(); got != tt.final {
					t.Errorf("state final output = %q, want %q", got, tt.final)
				}
			}
		})
	}
}

func TestMayEndRunMarksTerminalCalls(t *testing.T) {
	var got []bool
	spy := pipeline.Middleware{Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			err := next.ServeTurn(ctx, t)
			got = append(got, t.MayEndRun())
			for _, c := range t.Calls {
				got = append(got, c.Terminal)
			}
			return err
		})
	}}
	a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("a"), echo("b")}, ToolUse: pipeline.StopAtTools("b"), Model: scripted.New(
		scripted.CallTool("a", `1`),
		scripted.Respond(scripted.Call("a", `2`), scripted.Call("b", `3`)),
	)}
	if _, err := pipeline.NewRunner(pipeline.WithMiddleware(spy)).Run(context.Background(), a, pipeline.UserInput("go")); err != nil {
		t.Fatal(err)
	}
	// turn 1: may not end, a not terminal; turn 2: may end, a no, b yes.
	if diff := cmp.Diff([]bool{false, false, true, false, true}, got); diff != "" {
		t.Errorf("MayEndRun, Terminal... (-want +got):\n%s", diff)
	}
}

func TestHandoff(t *testing.T) {
	tests := []struct {
		name      string
		filter    func(context.Context, pipeline.HandoffInput) ([]state.Item, error)
		wantInput []string
	}{
		{
			name: "full history",
			wantInput: []string{
				"user_message:help with billing",
				"handoff_call:{}",
				`handoff_output:{"assistant":"Billing"}`,
			},
		},
		{
			name: "input filter replaces the context",
			filter: func(ctx context.Context, in pipeline.HandoffInput) ([]state.Item, error) {
				if in.From.Name != "Triage" || in.To.Name != "Billing" || in.History.Len() != 3 {
					return nil, errors.New("unexpected handoff input")
				}
				return []state.Item{state.UserMessage("summary: billing question")}, nil
			},
			wantInput: []string{"user_message:summary: billing question"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			billingModel := scripted.New(scripted.Reply("Billing here"))
			billing := &pipeline.Agent{Name: "Billing", Instructions: "billing", Model: billingModel}
			triageModel := scripted.New(scripted.CallTool("transfer_to_billing", `{}`))
			triage := &pipeline.Agent{Name: "Triage", Model: triageModel, Handoffs: []pipeline.Handoff{{Agent: billing, InputFilter: tt.filter}}}
			r := pipeline.NewRunner()

			var changed []pipeline.AgentChanged
			var res *pipeline.Result
			for ev, err := range r.Stream(context.Background(), triage, pipeline.UserInput("help with billing")) {
				if err != nil {
					t.Fatal(err)
				}
				switch e := ev.(type) {
				case pipeline.AgentChanged:
					changed = append(changed, e)
				case pipeline.RunCompleted:
					res = e.Result
				}
			}
			if diff := cmp.Diff([]pipeline.AgentChanged{{From: "Triage", To: "Billing"}}, changed); diff != "" {
				t.Errorf("AgentChanged events (-want +got):\n%s", diff)
			}
			if got := triageModel.Calls()[0].Tools; !cmp.Equal(got, []string{"transfer_to_billing"}) {
				t.Errorf("triage offered tools %q, want transfer_to_billing", got)
			}
			if res.FinalOutput() != "Billing here" || res.LastAgent() != billing || res.State().Agent() != "Billing" {
				t.Errorf("final %q, last agent %v, state agent %q; want Billing's answer and agent", res.FinalOutput(), res.LastAgent().Name, res.State().Agent())
			}
			bc := billingModel.Calls()
			if len(bc) != 1 || bc[0].Agent != "Billing" || bc[0].Instructions != "billing" {
				t.Fatalf("billing model calls = %+v", bc)
			}
			if diff := cmp.Diff(tt.wantInput, texts(bc[0].Input.Slice())); diff != "" {
				t.Errorf("billing model input (-want +got):\n%s", diff)
			}
			// The run's own record keeps everything, whatever the filter did.
			want := []string{"user_message:help with billing", "handoff_call:{}", `handoff_output:{"assistant":"Billing"}`, "assistant_message:Billing here"}
			if diff := cmp.Diff(want, texts(res.State().Items().Slice())); diff != "" {
				t.Errorf("run items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandoffFilterError(t *testing.T) {
	boom := errors.New("filter broke")
	billing := &pipeline.Agent{Name: "Billing", Model: scripted.New(scripted.Reply("x"))}
	triage := &pipeline.Agent{Name: "Triage", Model: scripted.New(scripted.CallTool("transfer_to_billing", `{}`)),
		Handoffs: []pipeline.Handoff{{Agent: billing, InputFilter: func(context.Context, pipeline.HandoffInput) ([]state.Item, error) {
			return nil, boom
		}}}}
	if _, err := pipeline.NewRunner().Run(context.Background(), triage, pipeline.UserInput("hi")); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the filter's error", err)
	}
}

// TestRunIDConflictsWithState: WithRunID used to be dropped silently when
// WithState was given; a different ID is now refused before anything runs.
func TestRunIDConflictsWithState(t *testing.T) {
	model := scripted.New(scripted.Reply("hi"))
	a := &pipeline.Agent{Name: "a", Model: model}
	run := state.NewRun("run-a", "a")
	_, err := pipeline.NewRunner().Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithState(run), pipeline.WithRunID("run-b"))
	if err == nil || !strings.Contains(err.Error(), "run-b") || !strings.Contains(err.Error(), "run-a") {
		t.Fatalf("Run(WithState(run-a), WithRunID(run-b)) = %v, want an error naming both IDs", err)
	}
	if run.Len() != 0 {
		t.Errorf("the refused run recorded %d items", run.Len())
	}
	res, err := pipeline.NewRunner().Run(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithState(run), pipeline.WithRunID("run-a"))
	if err != nil || res.RunID() != "run-a" {
		t.Fatalf("Run with the state's own ID = %v, %v", res, err)
	}
}
