package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// gate is a tool whose calls wait until the test releases them, so the
// test decides in which order they finish.
type gate struct {
	started  chan int
	mu       sync.Mutex
	release  map[int]chan struct{}
	inFlight int
	maxSeen  int
}

func newGate(n int) *gate {
	g := &gate{started: make(chan int, n), release: map[int]chan struct{}{}}
	for i := range n {
		g.release[i] = make(chan struct{})
	}
	return g
}

func (g *gate) tool() pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: "step"}, func(ctx context.Context, args json.RawMessage) (string, error) {
		var in struct{ I int }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		g.mu.Lock()
		g.inFlight++
		g.maxSeen = max(g.maxSeen, g.inFlight)
		g.mu.Unlock()
		g.started <- in.I
		select {
		case <-g.release[in.I]:
		case <-ctx.Done():
		}
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
		return "out" + strconv.Itoa(in.I), ctx.Err()
	})
}

// TestParallelToolsKeepCallOrder runs six calls with at most three in
// flight, finishing each time the latest one started first, and checks
// the bound, the results' call order and the outputs' positions.
func TestParallelToolsKeepCallOrder(t *testing.T) {
	const n, bound = 6, 3
	g := newGate(n)
	var parts []scripted.Part
	for i := range n {
		parts = append(parts, scripted.Call("step", `{"i":`+strconv.Itoa(i)+`}`))
	}
	a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{g.tool()}, ToolUse: pipeline.StopOnFirstTool(),
		Model: scripted.New(scripted.Respond(parts...))}
	var results []string
	spy := pipeline.Middleware{Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			err := next.ServeTurn(ctx, t)
			for i, r := range t.Results {
				results = append(results, t.Calls[i].CallID+"="+r.Output)
			}
			return err
		})
	}}
	type outcome struct {
		res *pipeline.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := pipeline.NewRunner(pipeline.WithToolConcurrency(bound), pipeline.WithMiddleware(spy)).Run(context.Background(), a, pipeline.UserInput("go"), pipeline.WithRunID("r"))
		done <- outcome{res, err}
	}()

	var finished []int
	inFlight := map[int]bool{}
	for len(finished) < n {
		// Wait until the bound is reached or every remaining call started.
		for len(inFlight) < min(bound, n-len(finished)) {
			inFlight[<-g.started] = true
		}
		select {
		case i := <-g.started:
			t.Fatalf("call %d started with %d calls in flight (bound %d)", i, len(inFlight), bound)
		case <-time.After(10 * time.Millisecond):
		}
		last := slices.Max(slicesKeys(inFlight))
		delete(inFlight, last)
		finished = append(finished, last)
		close(g.release[last])
	}
	out := <-done
	if out.err != nil {
		t.Fatal(out.err)
	}
	if g.maxSeen != bound {
		t.Errorf("at most %d calls were in flight, want exactly the bound %d", g.maxSeen, bound)
	}
	if slices.IsSorted(finished) {
		t.Fatalf("calls finished in call order %v; the test wants them out of order", finished)
	}

	wantResults := []string{"call_r_1_1=out0", "call_r_1_2=out1", "call_r_1_3=out2", "call_r_1_4=out3", "call_r_1_5=out4", "call_r_1_6=out5"}
	if diff := cmp.Diff(wantResults, results); diff != "" {
		t.Errorf("Turn.Results (-want +got):\n%s", diff)
	}
	// Calls at 2..7, outputs reserved at 8..13 in call order.
	var got []string
	for _, it := range out.res.State().Items().Slice() {
		got = append(got, strconv.FormatInt(it.Seq(), 10)+":"+it.Kind().String()+":"+it.CallID())
	}
	want := []string{"1:user_message:"}
	for i := range n {
		want = append(want, strconv.Itoa(2+i)+":tool_call:call_r_1_"+strconv.Itoa(i+1))
	}
	for i := range n {
		want = append(want, strconv.Itoa(2+n+i)+":tool_output:call_r_1_"+strconv.Itoa(i+1))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items by position (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(views(out.res.State().Items().Slice()), views(out.res.NewItems())); diff != "" {
		t.Errorf("NewItems differ from the state's items (-state +new):\n%s", diff)
	}
	if out.res.FinalOutput() != "out0" {
		t.Errorf("FinalOutput = %q, want the first call's output", out.res.FinalOutput())
	}
}

func slicesKeys(m map[int]bool) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// TestParallelToolErrorCancelsTheOthers checks that with
// WithToolErrorsAbort the first failure cancels the calls in flight, and
// that the failure, not the cancellations, is returned.
func TestParallelToolErrorCancelsTheOthers(t *testing.T) {
	started := make(chan string, 2)
	boom := pipeline.NewTool(pipeline.ToolSpec{Name: "boom"}, func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-started
		<-started // both waiting calls are in flight
		return "", errBoom
	})
	a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{blocking("wait", started), boom}, Model: scripted.New(scripted.Respond(
		scripted.Call("wait", `1`), scripted.Call("wait", `2`), scripted.Call("boom", `{}`),
	))}
	res, err := pipeline.NewRunner(pipeline.WithToolErrorsAbort()).Run(context.Background(), a, pipeline.UserInput("go"))
	var te *pipeline.ToolError
	if !errors.As(err, &te) || te.Tool != "boom" || !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want *ToolError for boom", err)
	}
	if got := outputs(res.State().Items().Slice()); len(got) != 0 {
		t.Errorf("outputs recorded after the abort: %q", got)
	}
}

var errBoom = errors.New("boom")

// TestItemsKeepModelOrder checks positions across a response mixing
// reasoning, messages and calls, and the next turn after it.
func TestItemsKeepModelOrder(t *testing.T) {
	a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("x")}, Model: scripted.New(
		scripted.Respond(scripted.Think("plan"), scripted.Text("checking"), scripted.Call("x", `1`), scripted.Think("more"), scripted.Call("x", `2`)),
		scripted.Reply("done"),
	)}
	res, err := pipeline.NewRunner().Run(context.Background(), a, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"user_message:go", "reasoning:plan", "assistant_message:checking", "tool_call:1", "reasoning:more", "tool_call:2",
		"tool_output:x(1)", "tool_output:x(2)", "assistant_message:done",
	}
	items := res.NewItems()
	if diff := cmp.Diff(want, texts(items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	for i, it := range items {
		if it.Seq() != int64(i+1) {
			t.Errorf("item %d (%s) has Seq %d, want %d", i, it, it.Seq(), i+1)
		}
	}
	if calls := res.State().Items().Slice(); calls[6].CallID() != calls[3].CallID() || calls[7].CallID() != calls[5].CallID() {
		t.Errorf("outputs are not in call order: %v", calls)
	}
}
