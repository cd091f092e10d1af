package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

var errModelDown = errors.New("model down")

// Invariant 1: when a tool returns, its call and output are in the session
// before any later stage runs, with the earlier items of its response; a
// crash later in the turn keeps them.
//
// Checked to fail without it by temporarily removing the l.commitCall call
// from the tool stage: the second tool then sees [user:hi] only, and the
// failed turn leaves only the input.
func TestInvariant1_SideEffectsCommitAtOnce(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	errBoom := errors.New("boom")
	var atBoom []string
	boom := toolFunc{name: "boom", fn: func(context.Context, *pipeline.ToolCall) (string, error) {
		atBoom = show(list(t, store)) // the session as the next tool starts
		return "", errBoom
	}}
	var runs pipelinetest.Ledger
	agent := &pipeline.Agent{
		Name: "a", Tools: []pipeline.Tool{echoTool("search", &runs, nil), boom},
		Model: scripted.New(scripted.Respond(scripted.Think("plan"), scripted.Text("let me look"), scripted.Call("search", `{}`), scripted.Call("boom", `{}`))),
	}
	runner := pipeline.NewRunner(pipeline.WithToolConcurrency(1), pipeline.WithToolErrorsAbort(), pipeline.WithMiddleware(persistence.Middleware(store)))

	_, err := runner.Run(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid))
	if !errors.Is(err, errBoom) {
		t.Fatalf("Run error = %v, want the tool's", err)
	}
	want := []string{"user:hi", "reasoning:plan", "msg:let me look", "call:search", "out:search done"}
	if d := cmp.Diff(want, atBoom); d != "" {
		t.Errorf("session when the next tool started (-want +got):\n%s", d)
	}
	// The turn failed: the input and the committed tool items stay.
	if d := cmp.Diff(want, show(list(t, store))); d != "" {
		t.Errorf("session after the failure (-want +got):\n%s", d)
	}
}

// Invariant 2: the model output of a turn that can end the run waits for
// the verdict; a tripwire discards it but keeps committed tool items, and a
// terminal tool is stored with its output withheld.
//
// Checked to fail without it by temporarily making the middleware treat
// every turn as unable to end the run (held := false in commitCall and
// settleHeld a no-op): "final message trips" then stores the rejected
// message, and "stop on first tool" stores the pair before the verdict.
func TestInvariant2_ModelOutputWaitsForVerdict(t *testing.T) {
	t.Parallel()
	failCheck := func(string) error { return fmt.Errorf("check: backend down: %w", pipeline.ErrGuardrailFailed) }
	tests := []struct {
		name        string
		toolUse     pipeline.ToolUseBehavior
		steps       []scripted.Step
		verdict     func(string) error
		cancel      bool // cancel the run just before the verdict
		inputTrip   bool // an input guardrail trips on the first turn
		wantErr     error
		wantAtCheck []string // the session as the verdict is made
		want        []string
	}{
		{
			name:        "final message passes",
			steps:       []scripted.Step{scripted.CallTool("search", `{}`), scripted.Reply("all good")},
			verdict:     tripOnBad,
			wantAtCheck: []string{"user:hi", "call:search", "out:search done"},
			want:        []string{"user:hi", "call:search", "out:search done", "msg:all good"},
		},
		{
			name:        "final message trips (seed 001)",
			steps:       []scripted.Step{scripted.CallTool("search", `{}`), scripted.Respond(scripted.Think("hm"), scripted.Text("the secret"))},
			verdict:     tripOnBad,
			wantErr:     pipeline.ErrOutputRejected,
			wantAtCheck: []string{"user:hi", "call:search", "out:search done"},
			want:        []string{"user:hi", "call:search", "out:search done"},
		},
		{
			name:        "stop on first tool passes",
			toolUse:     pipeline.StopOnFirstTool(),
			steps:       []scripted.Step{scripted.Respond(scripted.Text("on it"), scripted.Call("search", `{}`))},
			verdict:     tripOnBad,
			wantAtCheck: []string{"user:hi"},
			want:        []string{"user:hi", "msg:on it", "call:search", "out:search done"},
		},
		{
			name:        "stop on first tool trips",
			toolUse:     pipeline.StopOnFirstTool(),
			steps:       []scripted.Step{scripted.Respond(scripted.Think("go"), scripted.Text("on it"), scripted.Call("search", `{}`))},
			verdict:     func(string) error { return tripOnBad(bad) },
			wantErr:     pipeline.ErrOutputRejected,
			wantAtCheck: []string{"user:hi"},
			want:        []string{"user:hi", "reasoning:go", "call:search", "out:" + persistence.WithheldOutput},
		},
		{
			name:        "stop at tools: the other tool commits at once",
			toolUse:     pipeline.StopAtTools("final"),
			steps:       []scripted.Step{scripted.Respond(scripted.Text("wrapping up"), scripted.Call("search", `{}`), scripted.Call("final", `{}`))},
			verdict:     func(string) error { return tripOnBad(bad) },
			wantErr:     pipeline.ErrOutputRejected,
			wantAtCheck: []string{"user:hi", "call:search", "out:search done"},
			want:        []string{"user:hi", "call:search", "call:final", "out:search done", "out:" + persistence.WithheldOutput},
		},
		{
			name:        "guardrail error keeps the turn",
			steps:       []scripted.Step{scripted.Respond(scripted.Text("hello"))},
			verdict:     failCheck,
			wantErr:     pipeline.ErrGuardrailFailed,
			wantAtCheck: []string{"user:hi"},
			want:        []string{"user:hi", "msg:hello"},
		},
		{
			name:        "cancelled before the verdict",
			steps:       []scripted.Step{scripted.CallTool("search", `{}`), scripted.Reply("all good")},
			verdict:     tripOnBad,
			cancel:      true,
			wantErr:     context.Canceled,
			wantAtCheck: []string{"user:hi", "call:search", "out:search done"},
			want:        []string{"user:hi", "call:search", "out:search done"},
		},
		{
			name:      "input tripwire keeps the input",
			steps:     []scripted.Step{scripted.Reply("never")},
			verdict:   tripOnBad,
			inputTrip: true,
			wantErr:   pipeline.ErrInputRejected,
			want:      []string{"user:hi"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := memory.New()
			t.Cleanup(func() { _ = store.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var runs pipelinetest.Ledger
			var atCheck []string
			check := outputCheck(tt.verdict, func(context.Context, *pipeline.Turn) {
				atCheck = show(list(t, store))
				if tt.cancel {
					cancel()
				}
			})
			inputCheck := pipeline.Middleware{Turn: func(next pipeline.Handler) pipeline.Handler {
				return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
					if tt.inputTrip && t.Number == 1 {
						return fmt.Errorf("input check: %w", pipeline.ErrInputRejected)
					}
					return next.ServeTurn(ctx, t)
				})
			}}
			agent := &pipeline.Agent{
				Name: "a", Model: scripted.New(tt.steps...), ToolUse: tt.toolUse,
				Tools: []pipeline.Tool{echoTool("search", &runs, nil), echoTool("final", &runs, nil)},
			}
			runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), inputCheck, check))
			_, err := runner.Run(ctx, agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Run error = %v, want %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.wantAtCheck, atCheck); d != "" {
				t.Errorf("session at the verdict (-want +got):\n%s", d)
			}
			got := list(t, store)
			if d := cmp.Diff(tt.want, show(got)); d != "" {
				t.Errorf("session (-want +got):\n%s", d)
			}
			if err := validInput(got); err != nil {
				t.Errorf("session is not valid model input: %v", err)
			}
		})
	}
}

// Invariant 3: the session lists a run's items in model output order,
// whatever order they were committed in.
//
// Checked to fail without it by temporarily making session/memory append
// every new item at the end (commit order) instead of at its (place, Seq):
// the slow call's pair then lands after the fast one's.
func TestInvariant3_OriginalOrder(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	fastCommitted := make(chan struct{})
	var atFast []string
	// An outer tool stage sees a call return after persistence committed it.
	observe := pipeline.Middleware{Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			res, err := next.CallTool(ctx, c)
			if c.Name == "fast" {
				atFast = show(list(t, store))
				close(fastCommitted)
			}
			return res, err
		})
	}}
	var runs pipelinetest.Ledger
	slow := echoTool("slow", &runs, func(ctx context.Context, _ *pipeline.ToolCall) {
		select {
		case <-fastCommitted:
		case <-ctx.Done():
		}
	})
	agent := &pipeline.Agent{
		Name: "a", Tools: []pipeline.Tool{slow, echoTool("fast", &runs, nil)},
		Model: scripted.New(
			scripted.Respond(scripted.Text("both"), scripted.Call("slow", `{}`), scripted.Call("fast", `{}`)),
			scripted.Reply("done"),
			scripted.Reply("second run"),
		),
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(observe, persistence.Middleware(store)))
	ctx := context.Background()
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid)); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("again"), pipeline.WithSessionID(sid)); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"user:hi", "msg:both", "call:fast", "out:fast done"}, atFast); d != "" {
		t.Errorf("session when the fast call returned (-want +got):\n%s", d)
	}
	want := []string{
		"user:hi", "msg:both", "call:slow", "call:fast", "out:slow done", "out:fast done", "msg:done",
		"user:again", "msg:second run",
	}
	if d := cmp.Diff(want, show(list(t, store))); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
}

// Invariant 4: appends are idempotent on (run ID, Seq); a resumed append
// after an ambiguous failure never duplicates and never drops an item.
//
// Checked to fail without it by temporarily turning off session/memory's
// check for an item already stored at (run ID, Seq): after the ambiguous
// (after-write) failure, resume then stores the tool items twice.
func TestInvariant4_ExactlyOnceInSession(t *testing.T) {
	t.Parallel()
	for _, fault := range []faulty.Fault{faulty.FailAfter(2), faulty.FailBefore(2)} {
		t.Run(fault.Mode.String(), func(t *testing.T) {
			t.Parallel()
			store := faulty.New(memory.New(), fault)
			t.Cleanup(func() { _ = store.Close() })
			var runs pipelinetest.Ledger
			agent := &pipeline.Agent{
				Name: "a", Tools: []pipeline.Tool{echoTool("search", &runs, nil)},
				Model: scripted.New(scripted.Respond(scripted.Text("looking"), scripted.Call("search", `{}`)), scripted.Reply("found")),
			}
			runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
			ctx := context.Background()
			res, err := runner.Run(ctx, agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid))
			ae, ok := errors.AsType[*persistence.AppendError](err)
			if !ok || !errors.Is(err, faulty.ErrInjected) || ae.Seq != 2 || ae.RunID != res.RunID() {
				t.Fatalf("Run error = %v, want an AppendError at seq 2 caused by the fault", err)
			}
			res, err = runner.Resume(ctx, agent, pipelinetest.RoundTrip(t, res.State()))
			if err != nil || res.FinalOutput() != "found" {
				t.Fatalf("Resume = %q, %v", res.FinalOutput(), err)
			}
			want := []string{"user:hi", "msg:looking", "call:search", "out:search done", "msg:found"}
			if d := cmp.Diff(want, show(list(t, store))); d != "" {
				t.Errorf("session (-want +got):\n%s", d)
			}
			if n := runs.Runs("search"); n != 1 {
				t.Errorf("search ran %d times, want 1", n)
			}
		})
	}
}

// appendCounter is a session store that counts how often each position
// of a run is handed to Append.
type appendCounter struct {
	session.Store
	mu sync.Mutex
	n  map[int64]int
}

func (s *appendCounter) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	s.mu.Lock()
	if s.n == nil {
		s.n = make(map[int64]int)
	}
	for _, it := range items {
		s.n[it.Seq()]++
	}
	s.mu.Unlock()
	return s.Store.Append(ctx, sessionID, runID, items)
}

// TestInvariant4_NothingAppendedTwice: without failures, persistence hands
// each item to the store once. The store's idempotency is the guard for
// retries; a ledger that re-sends what it already stored writes more than
// the turn's new items (invariant 14) and leans on that guard for nothing.
// The response holds reasoning and two calls, so the second call's commit
// follows items the first one stored.
//
// Checked to fail without it by letting commitCall take items already
// marked stored: the reasoning reached Append twice.
func TestInvariant4_NothingAppendedTwice(t *testing.T) {
	t.Parallel()
	store := &appendCounter{Store: memory.New()}
	t.Cleanup(func() { _ = store.Close() })
	var runs pipelinetest.Ledger
	agent := &pipeline.Agent{
		Name: "a", Tools: []pipeline.Tool{echoTool("list", &runs, nil), echoTool("search", &runs, nil)},
		Model: scripted.New(
			scripted.Respond(scripted.Think("two lookups"), scripted.Call("list", `{}`), scripted.Call("search", `{}`)),
			scripted.Reply("found"),
		),
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
	res, err := runner.Run(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid))
	if err != nil || res.FinalOutput() != "found" {
		t.Fatalf("Run = %q, %v", res.FinalOutput(), err)
	}
	items := list(t, store)
	if len(items) != 7 {
		t.Fatalf("session holds %v, want 7 items", show(items))
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for _, it := range items {
		if n := store.n[it.Seq()]; n != 1 {
			t.Errorf("%s was handed to Append %d times, want 1", it, n)
		}
	}
}

// Invariant 5: a tool runs at most once per approval. Resuming the
// checkpoint saved at the pause after a later resume already ran the tool
// (and crashed before its state was saved) reuses the committed output.
//
// Checked to fail without it by temporarily removing the lookup on resumed
// calls in the tool stage: delete then runs twice.
func TestInvariant5_ToolRunsAtMostOnce(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	var runs pipelinetest.Ledger
	agent := &pipeline.Agent{
		Name: "a", Tools: []pipeline.Tool{echoTool("delete", &runs, nil)},
		Model: scripted.New(
			scripted.CallTool("delete", `{"path":"/tmp/x"}`),
			scripted.Fail(errModelDown), // the first resume crashes after the tool ran
			scripted.Reply("deleted"),
		),
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), requireApproval("delete")))
	ctx := context.Background()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("clean up"), pipeline.WithSessionID(sid))
	if err != nil || !res.Interrupted() {
		t.Fatalf("Run = %v, interrupted %v; want a pause", err, res.Interrupted())
	}
	checkpoint, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	resume := func() (*pipeline.Result, error) {
		run, err := state.Unmarshal(checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		decideAll(run, state.Approved)
		return runner.Resume(ctx, agent, run)
	}
	if _, err := resume(); !errors.Is(err, errModelDown) {
		t.Fatalf("first resume error = %v, want the crash", err)
	}
	res, err = resume() // the same checkpoint, in "another process"
	if err != nil || res.FinalOutput() != "deleted" {
		t.Fatalf("second resume = %q, %v", res.FinalOutput(), err)
	}
	if n := runs.Runs("delete"); n != 1 {
		t.Errorf("delete ran %d times, want 1", n)
	}
	want := []string{"user:clean up", "call:delete", "out:delete done", "msg:deleted"}
	if d := cmp.Diff(want, show(list(t, store))); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
}

// Invariant 6: guardrail results, approvals and usage are in the state
// before the append that could fail; the failed run's state reports them,
// live and after a JSON round trip, and resume counts them once.
//
// Checked to fail without it by temporarily not saving the decision of a
// turn whose final commit failed (saveNext a no-op): resume then calls the
// model again (script exhausted) and would run the check a second time.
func TestInvariant6_ResultsPublishedBeforeAppendFails(t *testing.T) {
	t.Parallel()
	store := faulty.New(memory.New(), faulty.FailBefore(3)) // 1 input, 2 tool, 3 final message
	t.Cleanup(func() { _ = store.Close() })
	var runs pipelinetest.Ledger
	agent := &pipeline.Agent{
		Name: "a", Tools: []pipeline.Tool{echoTool("search", &runs, nil)},
		Model: scripted.New(scripted.CallTool("search", `{}`), scripted.Reply("fine")),
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), outputCheck(tripOnBad, nil)))
	ctx := context.Background()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid))
	if _, ok := errors.AsType[*persistence.AppendError](err); !ok {
		t.Fatalf("Run error = %v, want *AppendError", err)
	}
	wantUsage := res.Usage()
	if wantUsage.Requests != 2 {
		t.Fatalf("usage requests = %d, want 2", wantUsage.Requests)
	}
	for name, run := range map[string]*state.Run{"live": res.State(), "json": pipelinetest.RoundTrip(t, res.State())} {
		if g := run.GuardrailResults(); len(g) != 1 || g[0].Tripped {
			t.Errorf("%s state guardrail results = %+v, want one pass", name, g)
		}
		if d := cmp.Diff(wantUsage, run.Usage()); d != "" {
			t.Errorf("%s state usage (-want +got):\n%s", name, d)
		}
	}
	run := pipelinetest.RoundTrip(t, res.State())
	res, err = runner.Resume(ctx, agent, run)
	if err != nil || res.FinalOutput() != "fine" {
		t.Fatalf("Resume = %q, %v", res.FinalOutput(), err)
	}
	if g := run.GuardrailResults(); len(g) != 1 {
		t.Errorf("after resume: %d guardrail results, want 1", len(g))
	}
	if d := cmp.Diff(wantUsage, run.Usage()); d != "" {
		t.Errorf("after resume usage (-want +got):\n%s", d)
	}
	want := []string{"user:hi", "call:search", "out:search done", "msg:fine"}
	if d := cmp.Diff(want, show(list(t, store))); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
}

// Invariant 9: the session never holds a call without its outcome; a call
// that waits for approval is stored with its outcome when it is decided,
// at its position, and the next run's history is valid model input.
//
// Checked to fail without it by temporarily letting the tool stage commit
// pending results (the call alone): the paused session then holds
// call:delete without output.
func TestInvariant9_HistoryIsValidModelInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		verdict state.Verdict
		want    []string
	}{
		{
			name: "approved", verdict: state.Approved,
			want: []string{"user:tidy", "call:list", "call:delete", "out:list done", "out:delete done", "msg:tidied", "user:thanks", "msg:welcome"},
		},
		{
			name: "rejected", verdict: state.Rejected,
			want: []string{"user:tidy", "call:list", "call:delete", "out:list done", "out:Tool execution was not approved.", "msg:tidied", "user:thanks", "msg:welcome"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := memory.New()
			t.Cleanup(func() { _ = store.Close() })
			var runs pipelinetest.Ledger
			model := scripted.New(
				scripted.Respond(scripted.Call("list", `{}`), scripted.Call("delete", `{}`)),
				scripted.Reply("tidied"),
				scripted.Reply("welcome"),
			)
			agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{echoTool("list", &runs, nil), echoTool("delete", &runs, nil)}}
			runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), requireApproval("delete")))
			ctx := context.Background()
			res, err := runner.Run(ctx, agent, pipeline.UserInput("tidy"), pipeline.WithSessionID(sid))
			if err != nil || !res.Interrupted() {
				t.Fatalf("Run = %v, interrupted %v", err, res.Interrupted())
			}
			if d := cmp.Diff([]string{"user:tidy", "call:list", "out:list done"}, show(list(t, store))); d != "" {
				t.Errorf("session at the pause (-want +got):\n%s", d)
			}
			run := pipelinetest.RoundTrip(t, res.State())
			decideAll(run, tt.verdict)
			if _, err := runner.Resume(ctx, agent, run); err != nil {
				t.Fatal(err)
			}
			if _, err := runner.Run(ctx, agent, pipeline.UserInput("thanks"), pipeline.WithSessionID(sid)); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, show(list(t, store))); d != "" {
				t.Errorf("session (-want +got):\n%s", d)
			}
			calls := model.Calls()
			if err := validInput(calls[len(calls)-1].Input.Slice()); err != nil {
				t.Errorf("the next run's model input is not valid: %v", err)
			}
		})
	}
}

// TestInvariant9_ReusedCallIDWaitsForItsOutcome: a model that reuses a
// call ID in a later response (some OpenAI-compatible servers number calls
// per response) must not make persistence take the earlier call's output
// for the later call's outcome. The later call waits for approval, so at
// the pause the session must not hold it.
//
// Checked to fail without it: with persistence asking Run.Completed by
// call ID, the paused session held call:delete without its output.
func TestInvariant9_ReusedCallIDWaitsForItsOutcome(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	var runs pipelinetest.Ledger
	step := 0
	model := pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		step++
		var it state.Item
		switch step {
		case 1:
			it = state.ToolCall("fc_1", "c1", "list", `{}`)
		case 2:
			it = state.ToolCall("fc_2", "c1", "delete", `{}`) // the same call ID
		default:
			it = state.AssistantMessage("msg_3", "tidied")
		}
		return &pipeline.ModelResponse{Items: []state.Item{it}}, nil
	})
	agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{echoTool("list", &runs, nil), echoTool("delete", &runs, nil)}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), requireApproval("delete")))
	ctx := context.Background()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("tidy"), pipeline.WithSessionID(sid))
	if err != nil || !res.Interrupted() {
		t.Fatalf("Run = %v, interrupted %v", err, res.Interrupted())
	}
	if d := cmp.Diff([]string{"user:tidy", "call:list", "out:list done"}, show(list(t, store))); d != "" {
		t.Errorf("session at the pause (-want +got):\n%s", d)
	}
	run := pipelinetest.RoundTrip(t, res.State())
	decideAll(run, state.Approved)
	if _, err := runner.Resume(ctx, agent, run); err != nil {
		t.Fatal(err)
	}
	want := []string{"user:tidy", "call:list", "out:list done", "call:delete", "out:delete done", "msg:tidied"}
	// Each call is followed by its own outcome (validInput would refuse the
	// reused ID itself, which is the model's doing).
	if d := cmp.Diff(want, show(list(t, store))); d != "" {
		t.Errorf("session after the resume (-want +got):\n%s", d)
	}
}

// TestInvariant9_ReasoningWaitsForItsCall: a response shaped "reasoning,
// then a call that needs approval" pauses. The reasoning belongs to the
// call, which is stored only with its outcome, so the paused session must
// not end with the reasoning alone (the Responses API refuses that as
// input); after the decision it is stored before its call.
//
// Checked to fail without it by disabling the loop in ledger.collect that
// holds back trailing reasoning: the paused session was [user, reasoning].
func TestInvariant9_ReasoningWaitsForItsCall(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	var runs pipelinetest.Ledger
	model := scripted.New(
		scripted.Respond(scripted.Think("the files are stale"), scripted.Call("delete", `{}`)),
		scripted.Reply("deleted"),
	)
	agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{echoTool("delete", &runs, nil)}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), requireApproval("delete")))
	ctx := context.Background()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("tidy"), pipeline.WithSessionID(sid))
	if err != nil || !res.Interrupted() {
		t.Fatalf("Run = %v, interrupted %v", err, res.Interrupted())
	}
	if d := cmp.Diff([]string{"user:tidy"}, show(list(t, store))); d != "" {
		t.Errorf("session at the pause (-want +got):\n%s", d)
	}
	run := pipelinetest.RoundTrip(t, res.State())
	decideAll(run, state.Approved)
	if _, err := runner.Resume(ctx, agent, run); err != nil {
		t.Fatal(err)
	}
	want := []string{"user:tidy", "reasoning:the files are stale", "call:delete", "out:delete done", "msg:deleted"}
	if d := cmp.Diff(want, show(list(t, store))); d != "" {
		t.Errorf("session after the resume (-want +got):\n%s", d)
	}
}
