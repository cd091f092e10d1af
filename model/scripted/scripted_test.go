package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

func call(input ...state.Item) *pipeline.ModelCall {
	return &pipeline.ModelCall{
		Agent: &pipeline.Agent{Name: "a"}, Instructions: "be brief", Input: state.CopyItems(input),
		Tools: []pipeline.ToolSpec{{Name: "add"}, {Name: "sub"}},
	}
}

type itemID struct {
	Kind, ID, CallID, Name, Text string
}

func ids(t *testing.T, items []state.Item) []itemID {
	t.Helper()
	out := make([]itemID, len(items))
	for i, it := range items {
		var raw struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(it.Raw(), &raw); err != nil {
			t.Fatalf("item %d (%s): raw JSON: %v", i, it, err)
		}
		out[i] = itemID{it.Kind().String(), raw.ID, it.CallID(), it.Name(), it.Text()}
	}
	return out
}

func TestDeterministicResponses(t *testing.T) {
	m := scripted.New(
		scripted.Respond(scripted.Think("plan"), scripted.Text("calling"), scripted.Call("add", `{"a":1}`), scripted.Call("sub", `{}`)),
		scripted.Reply("done"),
	)
	resp, err := m.Respond(context.Background(), call(state.UserMessage("hi")))
	if err != nil {
		t.Fatal(err)
	}
	want := []itemID{
		{"reasoning", "rs_1_1", "", "", "plan"},
		{"assistant_message", "msg_1_2", "", "", "calling"},
		{"tool_call", "fc_1_3", "call_1_3", "add", `{"a":1}`},
		{"tool_call", "fc_1_4", "call_1_4", "sub", `{}`},
	}
	if diff := cmp.Diff(want, ids(t, resp.Items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if resp.ID != "resp_1" || resp.Model != "scripted" || m.Name() != "scripted" {
		t.Errorf("response %q model %q, want resp_1, scripted", resp.ID, resp.Model)
	}
	if diff := cmp.Diff(state.Usage{Requests: 1, InputTokens: 1, OutputTokens: 4}, resp.Usage); diff != "" {
		t.Errorf("default usage (-want +got):\n%s", diff)
	}
	for _, it := range resp.Items {
		if it.Seq() != 0 {
			t.Errorf("%s has a position; the runner places items", it)
		}
	}
	resp, err = m.Respond(context.Background(), call())
	if err != nil || len(resp.Items) != 1 || resp.Items[0].Text() != "done" || resp.ID != "resp_2" {
		t.Errorf("second call = %+v, %v", resp, err)
	}

	// The same script gives the same answers.
	respond := func() *pipeline.ModelResponse {
		t.Helper()
		r, err := scripted.New(scripted.Respond(scripted.Think("plan"), scripted.Text("calling"), scripted.Call("add", `{"a":1}`), scripted.Call("sub", `{}`))).Respond(context.Background(), call(state.UserMessage("hi")))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first, again := respond(), respond()
	if len(first.Items) != 4 || len(again.Items) != len(first.Items) {
		t.Fatalf("two runs of one script gave %d and %d items, want 4 each", len(first.Items), len(again.Items))
	}
	for i := range first.Items {
		if !first.Items[i].Equal(again.Items[i]) {
			t.Errorf("item %d differs between two runs of one script", i)
		}
	}
}

func TestCallsAreRecordedCopies(t *testing.T) {
	m := scripted.New(scripted.Reply("a"), scripted.Reply("b"))
	c := call(state.UserMessage("hi"))
	c.Stream = true
	for i, c := range []*pipeline.ModelCall{c, call()} {
		if resp, err := m.Respond(context.Background(), c); err != nil || len(resp.Items) != 1 {
			t.Fatalf("call %d = %+v, %v; want one item", i+1, resp, err)
		}
	}
	got := m.Calls()
	if len(got) != 2 {
		t.Fatalf("%d calls recorded, want 2", len(got))
	}
	if got[0].Agent != "a" || got[0].Instructions != "be brief" || !got[0].Stream || got[0].Input.Len() != 1 || !cmp.Equal(got[0].Tools, []string{"add", "sub"}) {
		t.Errorf("first request = %+v", got[0])
	}
	got[0].Tools[0] = "changed"
	if m.Calls()[0].Tools[0] != "add" {
		t.Error("Calls() is not a copy")
	}
}

func TestFailuresAndExhaustion(t *testing.T) {
	boom := errors.New("rate limited")
	m := scripted.New(scripted.Fail(boom))
	if _, err := m.Respond(context.Background(), call()); !errors.Is(err, boom) {
		t.Errorf("Fail step: err = %v", err)
	}
	_, err := m.Respond(context.Background(), call())
	var ee *scripted.ExhaustedError
	if !errors.As(err, &ee) || !errors.Is(err, scripted.ErrScriptExhausted) || ee.Steps != 1 || ee.Call != 2 {
		t.Errorf("past the script: err = %#v, want *ExhaustedError{Steps: 1, Call: 2}", err)
	}
	if !strings.HasPrefix(err.Error(), "scripted: ") {
		t.Errorf("error %q lacks the package prefix", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := scripted.New(scripted.Reply("x")).Respond(ctx, call()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
}

func TestBlockAndAfter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := scripted.New(scripted.Block()).Respond(ctx, call()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Block: err = %v, want the context's error", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := scripted.New(scripted.Reply("slow").After(time.Hour)).Respond(ctx2, call()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("After: err = %v, want the context's error", err)
	}
	resp, err := scripted.New(scripted.Reply("soon").After(time.Millisecond)).Respond(context.Background(), call())
	if err != nil || resp.Items[0].Text() != "soon" {
		t.Errorf("After(1ms) = %v, %v", resp, err)
	}
}

func TestWithUsage(t *testing.T) {
	u := state.Usage{Requests: 1, InputTokens: 100, OutputTokens: 7, ReasoningTokens: 3}
	resp, err := scripted.New(scripted.Reply("x").WithUsage(u)).Respond(context.Background(), call())
	if err != nil || resp.Usage != u {
		t.Errorf("usage = %+v, %v; want %+v", resp.Usage, err, u)
	}
}

func TestGenerateConcurrent(t *testing.T) {
	m := scripted.Generate(func(n int) scripted.Step { return scripted.Reply("x") })
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids = map[string]bool{}
	)
	for range 8 {
		wg.Go(func() {
			for range 25 {
				resp, err := m.Respond(context.Background(), call())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids[resp.ID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(ids) != 200 || len(m.Calls()) != 200 {
		t.Errorf("%d distinct response IDs and %d calls, want 200 each", len(ids), len(m.Calls()))
	}
}

func TestStreamsTextDeltas(t *testing.T) {
	var log pipelinetest.EventLog
	turn := pipelinetest.NewTurn(t, pipelinetest.WithEvents(&log))
	c := pipelinetest.NewModelCall(t, turn)
	if !c.Stream {
		t.Fatal("a model call of a streaming turn must stream")
	}
	resp, err := scripted.New(scripted.Respond(scripted.Text("one two three"), scripted.Call("t", `{}`), scripted.Text("four"))).Respond(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range log.Events() {
		d := ev.(pipeline.TextDelta)
		got = append(got, d.ItemID+":"+d.Delta)
	}
	id := "msg_" + turn.Run.ID() + "_1_"
	want := []string{id + "1:one ", id + "1:two ", id + "1:three", id + "3:four"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if resp.Items[0].Text() != "one two three" {
		t.Errorf("the complete message is %q", resp.Items[0].Text())
	}
}

func TestGenerateNilPanics(t *testing.T) {
	defer func() {
		if v, _ := recover().(string); !strings.HasPrefix(v, "scripted: ") {
			t.Errorf("panic = %q, want a scripted: message", v)
		}
	}()
	scripted.Generate(nil)
}

// callIDs returns the call IDs of a run's items, in order.
func callIDs(items []state.Item) []string {
	var out []string
	for _, it := range items {
		if it.Kind().IsCall() {
			out = append(out, it.CallID())
		}
	}
	return out
}

// TestIDsUniquePerRun: two runs of the same script, each on a model of its
// own, as two requests sharing a session would be, get different call IDs,
// and the same ones again for the same run ID; the two models of a handoff
// do not repeat each other's IDs within one run (issue 13, item 11).
func TestIDsUniquePerRun(t *testing.T) {
	echo := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	run := func(runID string) []string {
		t.Helper()
		b := &pipeline.Agent{Name: "b", Tools: []pipeline.Tool{echo}, Model: scripted.New(scripted.CallTool("echo", `{}`), scripted.Reply("done"))}
		a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo}, Handoffs: []pipeline.Handoff{{Agent: b}}, Model: scripted.New(
			scripted.CallTool("echo", `{}`),
			scripted.CallTool("transfer_to_b", `{}`),
		)}
		res, err := pipeline.NewRunner().Run(context.Background(), a, pipeline.UserInput("go"), pipeline.WithRunID(runID))
		if err != nil {
			t.Fatal(err)
		}
		return callIDs(res.NewItems())
	}
	first, second, again := run("run_1"), run("run_2"), run("run_1")
	if want := []string{"call_run_1_1_1", "call_run_1_2_1", "call_run_1_3_1"}; !cmp.Equal(want, first) {
		t.Errorf("call IDs of run_1 = %q, want %q", first, want)
	}
	if !cmp.Equal(first, again) {
		t.Errorf("the same run ID gave %q, then %q", first, again)
	}
	seen := map[string]bool{}
	for _, id := range append(first, second...) {
		if seen[id] {
			t.Errorf("call ID %s repeats across runs or models: run_1 %q, run_2 %q", id, first, second)
		}
		seen[id] = true
	}
}

// TestIDsOfNestedRuns: a nested run's ID holds a '/', which does not reach
// the IDs.
func TestIDsOfNestedRuns(t *testing.T) {
	turn := pipelinetest.NewTurn(t)
	turn.Run = state.NewRun("run_1/call_run_1_1_1", "a")
	turn.Number = 2
	c := pipelinetest.NewModelCall(t, turn)
	resp, err := scripted.New(scripted.CallTool("t", `{}`)).Respond(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Items[0].CallID(), "call_run_1-call_run_1_1_1_2_1"; got != want {
		t.Errorf("call ID = %q, want %q", got, want)
	}
	if resp.ID != "resp_run_1-call_run_1_1_1_2" {
		t.Errorf("response ID = %q", resp.ID)
	}
}

// TestFreshIDs: by default a turn asked again answers with the same call
// IDs; with FreshIDs, with new ones, as a real model does.
func TestFreshIDs(t *testing.T) {
	ask := func(m *scripted.Model) string {
		t.Helper()
		run := state.NewRun("r1", "a")
		runner := pipeline.NewRunner()
		agent := &pipeline.Agent{Name: "a", Model: m}
		res, err := runner.Run(t.Context(), agent, pipeline.UserInput("hi"), pipeline.WithState(run))
		if err != nil {
			t.Fatal(err)
		}
		items := res.NewItems()
		return string(items[len(items)-1].Raw()) // the message, with its ID
	}
	for _, fresh := range []bool{false, true} {
		m := scripted.New(scripted.Reply("one"), scripted.Reply("one"))
		if fresh {
			m.FreshIDs()
		}
		first, second := ask(m), ask(m)
		if same := first == second; same == fresh {
			t.Errorf("FreshIDs %v: the same run and turn answered %s then %s", fresh, first, second)
		}
	}
	// Two processes, each with a model of its own, asking the same run's
	// turn: a real model's answers would not share IDs either.
	one := scripted.New(scripted.Reply("one")).FreshIDs()
	other := scripted.New(scripted.Reply("one")).FreshIDs()
	if a, b := ask(one), ask(other); a == b {
		t.Errorf("two models with FreshIDs answered the same run and turn alike: %s", a)
	}
}

// TestCallsNameRunAndTurn: each recorded request names the run and turn
// that made the call; a call outside a run names none.
func TestCallsNameRunAndTurn(t *testing.T) {
	m := scripted.New(scripted.CallTool("echo", `{}`), scripted.Reply("done"), scripted.Reply("alone"))
	echo := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	agent := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{echo}}
	if _, err := pipeline.NewRunner().Run(t.Context(), agent, pipeline.UserInput("hi"), pipeline.WithRunID("r1")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Respond(t.Context(), &pipeline.ModelCall{Agent: agent}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range m.Calls() {
		got = append(got, fmt.Sprintf("%q/%d", c.Run, c.Turn))
	}
	if want := []string{`"r1"/1`, `"r1"/2`, `""/0`}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}

// TestIDsAllocateAlikeForAnyRun: the IDs of a response cost the same
// allocations for a run ID of the runner's own form (36 bytes, longer
// than the compiler's scratch for a conversion) at turn 150 as for a short
// run ID at turn 5: the run ID and the turn number are written into the
// prefix, not copied and formatted into allocations of their own.
func TestIDsAllocateAlikeForAnyRun(t *testing.T) {
	allocs := func(runID string, turnNo int) float64 {
		turn := pipelinetest.NewTurn(t)
		turn.Run = state.NewRun(runID, "a")
		turn.Number = turnNo
		c := pipelinetest.NewModelCall(t, turn)
		m := scripted.Generate(func(int) scripted.Step { return scripted.CallTool("t", `{}`) })
		ctx := context.Background()
		return testing.AllocsPerRun(200, func() {
			if _, err := m.Respond(ctx, c); err != nil {
				t.Fatal(err)
			}
		})
	}
	short, long := allocs("r1", 5), allocs("run_0123456789abcdef0123456789abcdef", 150)
	if long != short {
		t.Errorf("a response of run %q at turn 150 allocates %v times, of run %q at turn 5 %v times", "run_0123…", long, "r1", short)
	}
}
