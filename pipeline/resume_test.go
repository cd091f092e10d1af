package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
	"github.com/turnkit/turnkit/state/statetest"
)

// calls counts the calls of each tool of a scenario.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) tool(name string) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(ctx context.Context, args json.RawMessage) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[name]++
		return name + " ok", nil
	})
}

func (c *calls) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// scenario is an agent whose model asks for "danger" (which needs
// approval) on response `at`, after at-1 responses that call "safe".
type scenario struct {
	agent *pipeline.Agent
	calls *calls
}

func newScenario(at int, handoff bool) scenario {
	c := &calls{}
	var steps []scripted.Step
	for range at - 1 {
		steps = append(steps, scripted.CallTool("safe", `{}`))
	}
	steps = append(steps, scripted.Respond(scripted.Call("safe", `{"n":1}`), scripted.Call("danger", `{"path":"/tmp/x"}`)), scripted.Reply("done"))
	worker := &pipeline.Agent{Name: "worker", Model: scripted.New(steps...), Tools: []pipeline.Tool{c.tool("safe"), c.tool("danger")}}
	if !handoff {
		return scenario{agent: worker, calls: c}
	}
	triage := &pipeline.Agent{
		Name:     "triage",
		Model:    scripted.New(scripted.CallTool(pipeline.HandoffToolName("worker"), `{}`)),
		Handoffs: []pipeline.Handoff{{Agent: worker}},
	}
	return scenario{agent: triage, calls: c}
}

func passOutput() pipeline.Middleware {
	return guardrails.Output(func(ctx context.Context, a *pipeline.Agent, out string) (guardrails.Verdict, error) {
		return guardrails.Pass(map[string]int{"len": len(out)}), nil
	})
}

func newRunner(guarded bool) *pipeline.Runner {
	mws := []pipeline.Middleware{approval.Require(approval.ByTool("danger"))}
	if guarded {
		mws = append(mws, passOutput())
	}
	return pipeline.NewRunner(pipeline.WithMiddleware(mws...), pipeline.WithIDGenerator(func() string { return "run_1" }))
}

// drive runs or resumes, streamed or not, and returns the result.
func drive(t *testing.T, stream bool, run func() (*pipeline.Result, error), events func() func(func(pipeline.Event, error) bool)) *pipeline.Result {
	t.Helper()
	if !stream {
		res, err := run()
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		return res
	}
	res, _, err := pipelinetest.Drain(events())
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if res == nil {
		t.Fatal("stream ended without RunCompleted")
	}
	return res
}

func start(t *testing.T, r *pipeline.Runner, a *pipeline.Agent, stream bool) *pipeline.Result {
	t.Helper()
	in := pipeline.UserInput("clean up")
	return drive(t, stream,
		func() (*pipeline.Result, error) { return r.Run(context.Background(), a, in) },
		func() func(func(pipeline.Event, error) bool) { return r.Stream(context.Background(), a, in) })
}

func resume(t *testing.T, r *pipeline.Runner, a *pipeline.Agent, st *state.Run, stream bool) *pipeline.Result {
	t.Helper()
	return drive(t, stream,
		func() (*pipeline.Result, error) { return r.Resume(context.Background(), a, st) },
		func() func(func(pipeline.Event, error) bool) { return r.ResumeStream(context.Background(), a, st) })
}

func kinds(st *state.Run) string {
	var out []string
	for _, it := range st.Items().All() {
		s := it.Kind().String()
		if it.Name() != "" {
			s += "(" + it.Name() + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestResumeMatrix pauses for an approval on the 1st, 2nd or 5th model
// response (or after a handoff), with and without output guardrails, and
// resumes live or from a JSON round trip, streamed or not: every way ends
// in the same final state, and the approved tool runs exactly once
// (invariants 7 and 13; seed 002 is the serialized, guarded, later-response
// case).
func TestResumeMatrix(t *testing.T) {
	t.Parallel()
	type shape struct {
		at      int
		handoff bool
		guarded bool
	}
	var shapes []shape
	for _, at := range []int{1, 2, 5} {
		for _, guarded := range []bool{false, true} {
			shapes = append(shapes, shape{at: at, guarded: guarded})
		}
	}
	shapes = append(shapes, shape{at: 1, handoff: true}, shape{at: 2, handoff: true, guarded: true})
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("response=%d/handoff=%v/guarded=%v", sh.at, sh.handoff, sh.guarded), func(t *testing.T) {
			t.Parallel()
			var finals []*state.Run
			var names []string
			for _, serialized := range []bool{false, true} {
				for _, stream := range []bool{false, true} {
					name := fmt.Sprintf("serialized=%v/stream=%v", serialized, stream)
					sc := newScenario(sh.at, sh.handoff)
					r := newRunner(sh.guarded)
					first := start(t, r, sc.agent, stream)
					if len(first.Interruptions()) != 1 || first.Interruptions()[0].Tool != "danger" {
						t.Fatalf("%s: interruptions %+v, want one for danger", name, first.Interruptions())
					}
					if got := sc.calls.count("safe"); got != sh.at {
						t.Fatalf("%s: safe ran %d times before the pause, want %d", name, got, sh.at)
					}
					st := first.State()
					if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
						t.Fatal(err)
					}
					if serialized {
						st = pipelinetest.RoundTrip(t, st)
					}
					res := resume(t, r, sc.agent, st, stream)
					if res.FinalOutput() != "done" {
						t.Fatalf("%s: final output %q, want done", name, res.FinalOutput())
					}
					if got := sc.calls.count("danger"); got != 1 {
						t.Errorf("%s: danger ran %d times, want 1", name, got)
					}
					if got := sc.calls.count("safe"); got != sh.at {
						t.Errorf("%s: safe ran %d times in all, want %d (a completed call ran again)", name, got, sh.at)
					}
					if sh.guarded {
						if g := st.GuardrailResults(); len(g) != 1 || g[0].Stage != state.StageOutput || g[0].Tripped {
							t.Errorf("%s: guardrail results %+v, want one passing output result", name, g)
						}
					}
					finals = append(finals, st)
					names = append(names, name)
				}
			}
			for i := 1; i < len(finals); i++ {
				if d := statetest.Diff(t, finals[i], finals[0]); d != "" {
					t.Errorf("%s ends differently from %s (-%s +%s):\n%s", names[i], names[0], names[0], names[i], d)
				}
			}
			t.Log(kinds(finals[0]))
		})
	}
}

// TestSerializedApprovalCheckpointResumesWithOutputGuardrails is seed 002:
// an approval on a later model response (after a completed one), with
// output guardrails, serialized and resumed, with a session ID set.
func TestSerializedApprovalCheckpointResumesWithOutputGuardrails(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		c := &calls{}
		a := &pipeline.Agent{
			Name: "test",
			Model: scripted.New(
				scripted.CallTool("normal_tool", `{}`),
				scripted.CallTool("approval_tool", `{}`),
				scripted.Reply("done"),
			),
			Tools: []pipeline.Tool{c.tool("normal_tool"), c.tool("approval_tool")},
		}
		r := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("approval_tool")), passOutput()))
		first, err := r.Run(context.Background(), a, pipeline.UserInput("hello"), pipeline.WithSessionID("probe"))
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Interruptions()) != 1 {
			t.Fatalf("interruptions %+v, want 1", first.Interruptions())
		}
		st := first.State()
		if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
			t.Fatal(err)
		}
		restored := pipelinetest.RoundTrip(t, st)
		if got, want := restored.Response(), st.Response(); got != want {
			t.Fatalf("boundary after round trip %+v, want %+v", got, want)
		}
		res := resume(t, r, a, restored, stream)
		if res.FinalOutput() != "done" {
			t.Errorf("stream=%v: final output %q, want done", stream, res.FinalOutput())
		}
		if c.count("approval_tool") != 1 || c.count("normal_tool") != 1 {
			t.Errorf("stream=%v: tools ran %v, want each once", stream, c.n)
		}
	}
}

// TestPartialDecisionsRenewTheInterruption decides one of two pending
// calls: the decided one runs, the other stays pending, and nothing that
// completed runs again.
func TestPartialDecisionsRenewTheInterruption(t *testing.T) {
	t.Parallel()
	c := &calls{}
	a := &pipeline.Agent{
		Name: "a",
		Model: scripted.New(
			scripted.Respond(scripted.Call("safe", `{}`), scripted.Call("danger", `{"n":1}`), scripted.Call("danger", `{"n":2}`)),
			scripted.Reply("done"),
		),
		Tools: []pipeline.Tool{c.tool("safe"), c.tool("danger")},
	}
	r := newRunner(false)
	first := start(t, r, a, false)
	if len(first.Interruptions()) != 2 {
		t.Fatalf("interruptions %+v, want 2", first.Interruptions())
	}
	st := pipelinetest.RoundTrip(t, first.State())
	if err := st.Reject(first.Interruptions()[1].CallID, "not that one"); err != nil {
		t.Fatal(err)
	}
	second := resume(t, r, a, st, false)
	if got := second.Interruptions(); len(got) != 1 || got[0].CallID != first.Interruptions()[0].CallID {
		t.Fatalf("renewed interruptions %+v, want only %s", got, first.Interruptions()[0].CallID)
	}
	if c.count("danger") != 0 || c.count("safe") != 1 {
		t.Fatalf("after a partial resume tools ran %v, want safe once and danger never", c.n)
	}
	st = pipelinetest.RoundTrip(t, second.State())
	if err := st.Approve(second.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	third := resume(t, r, a, st, true)
	if third.FinalOutput() != "done" || c.count("danger") != 1 || c.count("safe") != 1 {
		t.Fatalf("final %q, tools %v; want done, danger once, safe once", third.FinalOutput(), c.n)
	}
	out, ok := st.ItemAt(first.Interruptions()[1].OutputSeq)
	if !ok || out.Text() != "not that one" {
		t.Errorf("rejected call's output = %q (found %v), want the rejection message", out.Text(), ok)
	}
	if want := "user_message tool_call(safe) tool_call(danger) tool_call(danger) tool_output(safe) tool_output(danger) tool_output(danger) assistant_message"; kinds(st) != want {
		t.Errorf("items\n got %s\nwant %s", kinds(st), want)
	}
}

// TestResumeAfterFinishDoesNotRunAgain resumes the checkpoint saved at the
// pause twice over the same state: the second resume finds the call done.
func TestResumeAfterFinishDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	sc := newScenario(1, false)
	r := newRunner(false)
	first := start(t, r, sc.agent, false)
	st := first.State()
	if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	resume(t, r, sc.agent, st, false)
	if _, err := r.Resume(context.Background(), sc.agent, st); !errors.Is(err, pipeline.ErrNothingToResume) {
		t.Errorf("second Resume of a finished run = %v, want ErrNothingToResume", err)
	}
	if got := sc.calls.count("danger"); got != 1 {
		t.Errorf("danger ran %d times, want 1", got)
	}
}

// TestStatesFromOneResultDoNotShareDecisions is seed 003 and its
// follow-up: two states from one result are independent; approving through
// one leaves the other pending, and resuming the other pauses again
// without running the tool.
func TestStatesFromOneResultDoNotShareDecisions(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		sc := newScenario(1, false)
		r := newRunner(false)
		first := start(t, r, sc.agent, stream)
		decided, untouched := first.State(), first.State()
		before, err := state.Marshal(untouched)
		if err != nil {
			t.Fatal(err)
		}
		if err := decided.Approve(decided.Pending()[0].CallID); err != nil {
			t.Fatal(err)
		}
		after, _ := state.Marshal(untouched)
		if d := cmp.Diff(string(before), string(after)); d != "" {
			t.Fatalf("deciding on one state changed its sibling:\n%s", d)
		}
		res := resume(t, r, sc.agent, untouched, stream)
		if !res.Interrupted() || sc.calls.count("danger") != 0 {
			t.Fatalf("stream=%v: the undecided sibling ran danger %d times (interrupted=%v)", stream, sc.calls.count("danger"), res.Interrupted())
		}
		resume(t, r, sc.agent, decided, stream)
		if sc.calls.count("danger") != 1 {
			t.Errorf("stream=%v: danger ran %d times after the decided resume, want 1", stream, sc.calls.count("danger"))
		}
	}
}

// TestReturnedSnapshotsAreDetached mutates every value a result hands out:
// the state and later resumes see none of it.
func TestReturnedSnapshotsAreDetached(t *testing.T) {
	t.Parallel()
	sc := newScenario(2, false)
	r := newRunner(false)
	first := start(t, r, sc.agent, false)
	st := first.State()
	want, err := state.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}

	first.Interruptions()[0].Arguments = `{"path":"/"}`
	first.Interruptions()[0].CallID = "forged"
	p := st.Pending()
	p[0].Tool, p[0].Arguments = "safe", `{}`
	items := first.NewItems()
	items[0] = state.UserMessage("forged")
	all := st.Items().Slice()
	if len(all) < 2 {
		t.Fatalf("the state holds %d items, want a few", len(all))
	}
	all[0], all[len(all)-1] = state.UserMessage("forged"), state.AssistantMessage("msg_forged", "forged")
	slices.Reverse(all)
	_ = append(all[:1], state.UserMessage("appended"))
	d := st.Decisions()
	_ = append(d, state.Decision{Tool: "danger", Always: true, Verdict: state.Approved})

	got, err := state.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("mutating returned snapshots changed the state:\n%s", diff)
	}
	if err := st.Approve("forged"); !errors.Is(err, state.ErrUnknownCall) {
		t.Fatalf("Approve(forged) = %v, want ErrUnknownCall", err)
	}
	if err := st.Approve(st.Pending()[0].CallID); err != nil {
		t.Fatal(err)
	}
	resume(t, r, sc.agent, st, false)
	if sc.calls.count("danger") != 1 {
		t.Errorf("danger ran %d times, want 1", sc.calls.count("danger"))
	}
}

// pauseLive runs the one-call scenario on a run of its own, given with
// WithState, until the approval of danger pauses it.
func pauseLive(t *testing.T) (scenario, *pipeline.Runner, *state.Run, *pipeline.Result) {
	t.Helper()
	sc := newScenario(1, false)
	r := newRunner(false)
	live := state.NewRun("run_live", sc.agent.Name)
	first, err := r.Run(context.Background(), sc.agent, pipeline.UserInput("clean up"), pipeline.WithState(live))
	if err != nil {
		t.Fatal(err)
	}
	return sc, r, live, first
}

// approveAndResume approves the call callID of live and resumes that very
// run.
func approveAndResume(t *testing.T, r *pipeline.Runner, sc scenario, live *state.Run, callID string) {
	t.Helper()
	if err := live.Approve(callID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resume(context.Background(), sc.agent, live); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptionsOutliveTheLiveRun: a result shares the live run's
// pending approvals (the run replaces its list, never changes it in
// place), so resuming that very run (given with WithState), which
// resolves them, leaves the result's interruptions as they were.
//
// Checked to fail with the run's resolvePending deleting in place: the
// result's interruption became the zero Approval.
func TestInterruptionsOutliveTheLiveRun(t *testing.T) {
	t.Parallel()
	sc, r, live, first := pauseLive(t)
	want := first.Interruptions()
	if len(want) != 1 || want[0].Tool != "danger" {
		t.Fatalf("the run paused with %+v, want danger's approval", want)
	}
	approveAndResume(t, r, sc, live, want[0].CallID)
	if len(live.Pending()) != 0 || sc.calls.count("danger") != 1 {
		t.Fatalf("the resume left %d pending and ran danger %d times, want 0 and 1", len(live.Pending()), sc.calls.count("danger"))
	}
	if diff := cmp.Diff(want, first.Interruptions()); diff != "" {
		t.Errorf("resuming the live run changed the first result's interruptions (-before +after):\n%s", diff)
	}
}

// TestNewItemsOutliveTheLiveRun resumes the very run a first invocation
// served (given with WithState): the first result's new items stay the
// items that invocation recorded, not the resume's.
func TestNewItemsOutliveTheLiveRun(t *testing.T) {
	t.Parallel()
	sc, r, live, first := pauseLive(t)
	want := first.NewItems()
	if len(want) == 0 || len(first.Interruptions()) != 1 {
		t.Fatalf("the run paused with %d new items and %d interruptions, want some and 1", len(want), len(first.Interruptions()))
	}
	approveAndResume(t, r, sc, live, first.Interruptions()[0].CallID)
	if live.Len() <= len(want) {
		t.Fatalf("the resume left the run with %d items, want more than the first invocation's %d", live.Len(), len(want))
	}
	if diff := cmp.Diff(seqKinds(want), seqKinds(first.NewItems())); diff != "" {
		t.Errorf("resuming the live run changed the first result's new items (-before +after):\n%s", diff)
	}
}

// TestConcurrentResumeOneWins has two goroutines resume the same stored
// checkpoint: exactly one runs the tool, the other gets ErrConflict
// (invariant 10).
func TestConcurrentResumeOneWins(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		sc := newScenario(1, false)
		r := newRunner(false)
		store := memstore.New()
		first := start(t, r, sc.agent, false)
		ctx := context.Background()
		if err := store.Save(ctx, first.State()); err != nil {
			t.Fatal(err)
		}
		var (
			wg        sync.WaitGroup
			conflicts atomic.Int32
			finished  atomic.Int32
			loaded    sync.WaitGroup
		)
		loaded.Add(2)
		for range 2 {
			wg.Go(func() {
				st, err := store.Load(ctx, first.RunID())
				loaded.Done()
				if err != nil {
					t.Error(err)
					return
				}
				loaded.Wait() // both hold the same version before either decides
				if err := st.Approve(st.Pending()[0].CallID); err != nil {
					t.Error(err)
					return
				}
				res, err := approval.Resume(ctx, store, r, sc.agent, st)
				switch {
				case errors.Is(err, state.ErrConflict):
					conflicts.Add(1)
				case err != nil:
					t.Error(err)
				case res.FinalOutput() == "done":
					finished.Add(1)
				}
			})
		}
		wg.Wait()
		if conflicts.Load() != 1 || finished.Load() != 1 || sc.calls.count("danger") != 1 {
			t.Fatalf("round %d: %d conflicts, %d finished, danger ran %d times; want 1, 1, 1", i, conflicts.Load(), finished.Load(), sc.calls.count("danger"))
		}
		late, err := store.Load(ctx, first.RunID())
		if err != nil {
			t.Fatal(err)
		}
		if _, done := late.FinalOutput(); !done {
			t.Errorf("round %d: the stored run is not finished", i)
		}
	}
}

// TestLateWorkerFindsTheCallDecided loads the checkpoint after another
// worker claimed it: the call is already decided.
func TestLateWorkerFindsTheCallDecided(t *testing.T) {
	t.Parallel()
	sc := newScenario(1, false)
	r := newRunner(false)
	store := memstore.New()
	ctx := context.Background()
	first := start(t, r, sc.agent, false)
	if err := store.Save(ctx, first.State()); err != nil {
		t.Fatal(err)
	}
	st, _ := store.Load(ctx, first.RunID())
	callID := st.Pending()[0].CallID
	if err := st.Approve(callID); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, st); err != nil { // claimed, not yet resumed
		t.Fatal(err)
	}
	late, _ := store.Load(ctx, first.RunID())
	if err := late.Approve(callID); !errors.Is(err, state.ErrAlreadyDecided) {
		t.Fatalf("late Approve = %v, want ErrAlreadyDecided", err)
	}
}

// TestEditedArgumentsRefused edits the approved call's arguments
// consistently inside the checkpoint JSON: the decision's fingerprint no
// longer matches and the tool does not run; with signing, the edit is
// refused at once (invariant 11).
func TestEditedArgumentsRefused(t *testing.T) {
	t.Parallel()
	sc := newScenario(1, false)
	r := newRunner(false)
	first := start(t, r, sc.agent, false)
	st := first.State()
	if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	key := []byte("secret key of at least 32 bytes!")
	data, err := state.Marshal(st, state.WithSigningKey("k1", key))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(string(data), `/tmp/x`, `/etc`)
	if edited == string(data) {
		t.Fatal("the arguments are not in the checkpoint")
	}
	if _, err := state.Unmarshal([]byte(edited), state.WithVerifyKeys(map[string][]byte{"k1": key})); !errors.Is(err, state.ErrTampered) {
		t.Fatalf("signed edited checkpoint: Unmarshal = %v, want ErrTampered", err)
	}
	unsigned, err := state.Unmarshal([]byte(edited))
	if err != nil {
		t.Fatalf("consistent edit: Unmarshal = %v", err)
	}
	_, err = r.Resume(context.Background(), sc.agent, unsigned)
	if !errors.Is(err, state.ErrArgumentsChanged) {
		t.Fatalf("Resume(edited) = %v, want ErrArgumentsChanged", err)
	}
	if sc.calls.count("danger") != 0 {
		t.Errorf("danger ran %d times with edited arguments", sc.calls.count("danger"))
	}
}

// TestReusedCallIDRunsAgain has a model that numbers its calls per
// response ("call_0" every time), as several OpenAI-compatible servers do:
// the second response's call is a new call and runs, and its approval is
// its own.
func TestReusedCallIDRunsAgain(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	model := pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		switch n.Add(1) {
		case 1:
			return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc_a", "call_0", "safe", `{}`)}}, nil
		case 2:
			return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc_b", "call_0", "danger", `{}`)}}, nil
		}
		return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("m", "done")}}, nil
	})
	c := &calls{}
	a := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{c.tool("safe"), c.tool("danger")}}
	r := newRunner(false)
	first := start(t, r, a, false)
	if len(first.Interruptions()) != 1 || first.Interruptions()[0].Tool != "danger" {
		t.Fatalf("interruptions %+v, want danger's", first.Interruptions())
	}
	st := pipelinetest.RoundTrip(t, first.State())
	if err := st.Approve("call_0"); err != nil {
		t.Fatal(err)
	}
	if res := resume(t, r, a, st, false); res.FinalOutput() != "done" {
		t.Fatalf("final output %q", res.FinalOutput())
	}
	if c.count("safe") != 1 || c.count("danger") != 1 {
		t.Errorf("tools ran %v, want each once", c.n)
	}
}
