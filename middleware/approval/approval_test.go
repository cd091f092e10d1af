package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type counted struct {
	pipeline.Tool
	n *atomic.Int32
}

func tool(name string) counted {
	var n atomic.Int32
	return counted{n: &n, Tool: pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(context.Context, json.RawMessage) (string, error) {
		n.Add(1)
		return name + " ok", nil
	})}
}

// requirer is a tool that declares its own need for approval.
type requirer struct {
	counted
	need func(c *pipeline.ToolCall) (bool, error)
}

func (r requirer) NeedsApproval(_ context.Context, c *pipeline.ToolCall) (bool, error) {
	return r.need(c)
}

func call(name, args string) *pipeline.ToolCall {
	return &pipeline.ToolCall{Name: name, CallID: "call_1", Arguments: args, Tool: tool(name)}
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	boom := approval.PolicyFunc(func(context.Context, *pipeline.ToolCall) (bool, error) { return false, errors.New("boom") })
	big := approval.PolicyFunc(func(_ context.Context, c *pipeline.ToolCall) (bool, error) { return len(c.Arguments) > 10, nil })
	tests := []struct {
		name    string
		policy  approval.Policy
		give    *pipeline.ToolCall
		want    bool
		wantErr bool
	}{
		{name: "always", policy: approval.Always(), give: call("x", "{}"), want: true},
		{name: "never", policy: approval.Never(), give: call("x", "{}"), want: false},
		{name: "by tool, listed", policy: approval.ByTool("a", "x"), give: call("x", "{}"), want: true},
		{name: "by tool, other", policy: approval.ByTool("a"), give: call("x", "{}"), want: false},
		{name: "predicate", policy: big, give: call("x", `{"k":"long value"}`), want: true},
		{name: "any, one", policy: approval.Any(approval.Never(), nil, approval.ByTool("x")), give: call("x", "{}"), want: true},
		{name: "any, none", policy: approval.Any(approval.Never(), approval.ByTool("y")), give: call("x", "{}"), want: false},
		{name: "any, error fails closed", policy: approval.Any(boom, approval.Never()), give: call("x", "{}"), want: true, wantErr: true},
		{name: "all, every", policy: approval.All(approval.Always(), approval.ByTool("x")), give: call("x", "{}"), want: true},
		{name: "all, not every", policy: approval.All(approval.Always(), approval.ByTool("y")), give: call("x", "{}"), want: false},
		{name: "all, empty", policy: approval.All(), give: call("x", "{}"), want: false},
		{name: "all, error fails closed", policy: approval.All(approval.Always(), boom), give: call("x", "{}"), want: true, wantErr: true},
		{name: "not", policy: approval.Not(approval.ByTool("x")), give: call("y", "{}"), want: true},
		{name: "not, error fails closed", policy: approval.Not(boom), give: call("y", "{}"), want: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.policy.NeedsApproval(context.Background(), tt.give)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("NeedsApproval = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// run starts an agent whose only response calls the given tools, then
// replies "done".
func run(t *testing.T, mw pipeline.Middleware, tools []pipeline.Tool, parts ...scripted.Part) (*pipeline.Runner, *pipeline.Agent, *pipeline.Result) {
	t.Helper()
	a := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Respond(parts...), scripted.Reply("done")), Tools: tools}
	r := pipeline.NewRunner(pipeline.WithMiddleware(mw))
	res, err := r.Run(context.Background(), a, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	return r, a, res
}

func TestPendingCallWaitsOthersRun(t *testing.T) {
	t.Parallel()
	safe, danger := tool("safe"), tool("danger")
	_, _, res := run(t, approval.Require(approval.ByTool("danger")), []pipeline.Tool{safe, danger},
		scripted.Call("safe", `{}`), scripted.Call("danger", `{"p":1}`))
	if len(res.Interruptions()) != 1 || res.Interruptions()[0].Tool != "danger" || res.Interruptions()[0].Arguments != `{"p":1}` {
		t.Fatalf("interruptions %+v", res.Interruptions())
	}
	if safe.n.Load() != 1 || danger.n.Load() != 0 {
		t.Fatalf("safe ran %d, danger ran %d; want 1, 0", safe.n.Load(), danger.n.Load())
	}
	st := res.State()
	if _, done := st.Completed(res.Interruptions()[0].CallID); done {
		t.Error("the pending call has an output")
	}
}

func TestToolDeclaresNeed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		need        func(c *pipeline.ToolCall) (bool, error)
		wantPending bool
		wantErrs    int
	}{
		{name: "needs", need: func(*pipeline.ToolCall) (bool, error) { return true, nil }, wantPending: true},
		{name: "does not need", need: func(*pipeline.ToolCall) (bool, error) { return false, nil }},
		{name: "error fails closed", need: func(*pipeline.ToolCall) (bool, error) { return false, errors.New("no idea") }, wantPending: true, wantErrs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var reported atomic.Int32
			rt := requirer{counted: tool("x"), need: tt.need}
			mw := approval.Require(nil, approval.WithErrorHandler(func(_ context.Context, _ *pipeline.ToolCall, err error) {
				var pe *approval.PolicyError
				if errors.As(err, &pe) {
					reported.Add(1)
				}
			}))
			_, _, res := run(t, mw, []pipeline.Tool{rt}, scripted.Call("x", `{}`))
			if res.Interrupted() != tt.wantPending || int(reported.Load()) != tt.wantErrs {
				t.Errorf("interrupted %v (want %v), %d errors reported (want %d)", res.Interrupted(), tt.wantPending, reported.Load(), tt.wantErrs)
			}
		})
	}
}

func TestRejection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    []approval.Option
		message string
		want    string
	}{
		{name: "default", want: approval.DefaultRejection},
		{name: "message", message: "too risky", want: "too risky"},
		{name: "formatter", message: "too risky", want: "danger: too risky",
			opts: []approval.Option{approval.WithRejectionFormatter(func(c *pipeline.ToolCall, d state.Decision) string { return c.Name + ": " + d.Message })}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			danger := tool("danger")
			r, a, res := run(t, approval.Require(approval.ByTool("danger"), tt.opts...), []pipeline.Tool{danger}, scripted.Call("danger", `{}`))
			st := res.State()
			ap := res.Interruptions()[0]
			if err := st.Reject(ap.CallID, tt.message); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Resume(context.Background(), a, st); err != nil {
				t.Fatal(err)
			}
			out, ok := st.ItemAt(ap.OutputSeq)
			if !ok || out.Text() != tt.want || danger.n.Load() != 0 {
				t.Errorf("output %q (found %v), danger ran %d; want %q and never", out.Text(), ok, danger.n.Load(), tt.want)
			}
		})
	}
}

func TestExactBeatsAlways(t *testing.T) {
	t.Parallel()
	danger := tool("danger")
	r, a, res := run(t, approval.Require(approval.ByTool("danger")), []pipeline.Tool{danger},
		scripted.Call("danger", `{"n":1}`), scripted.Call("danger", `{"n":2}`))
	st := res.State()
	if err := st.ApproveAlways("danger"); err != nil {
		t.Fatal(err)
	}
	if err := st.Reject(res.Interruptions()[1].CallID, "not this one"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resume(context.Background(), a, st); err != nil {
		t.Fatal(err)
	}
	if danger.n.Load() != 1 {
		t.Errorf("danger ran %d times, want 1 (always approved, one exactly rejected)", danger.n.Load())
	}
	out, _ := st.ItemAt(res.Interruptions()[1].OutputSeq)
	if out.Text() != "not this one" {
		t.Errorf("rejected output %q", out.Text())
	}
}

func TestRejectAlways(t *testing.T) {
	t.Parallel()
	danger := tool("danger")
	r, a, res := run(t, approval.Require(approval.ByTool("danger")), []pipeline.Tool{danger}, scripted.Call("danger", `{}`))
	st := res.State()
	if err := st.RejectAlways("danger", "never danger"); err != nil {
		t.Fatal(err)
	}
	if err := st.RejectAlways("", "x"); err == nil {
		t.Error("RejectAlways with no tool succeeded")
	}
	if _, err := r.Resume(context.Background(), a, st); err != nil {
		t.Fatal(err)
	}
	if out, _ := st.ItemAt(res.Interruptions()[0].OutputSeq); out.Text() != "never danger" || danger.n.Load() != 0 {
		t.Errorf("output %q, danger ran %d", out.Text(), danger.n.Load())
	}
}

func TestDecisionErrorsChangeNothing(t *testing.T) {
	t.Parallel()
	_, _, res := run(t, approval.Require(approval.Always()), []pipeline.Tool{tool("x")}, scripted.Call("x", `{}`))
	st := res.State()
	id := res.Interruptions()[0].CallID
	if err := st.Approve(id); err != nil {
		t.Fatal(err)
	}
	before, _ := state.Marshal(st)
	tests := []struct {
		name   string
		decide func() error
		want   error
	}{
		{name: "unknown call", decide: func() error { return st.Approve("call_nope") }, want: state.ErrUnknownCall},
		{name: "unknown call reject", decide: func() error { return st.Reject("call_nope", "m") }, want: state.ErrUnknownCall},
		{name: "already decided", decide: func() error { return st.Reject(id, "changed my mind") }, want: state.ErrAlreadyDecided},
	}
	for _, tt := range tests {
		err := tt.decide()
		var de *state.DecisionError
		if !errors.Is(err, tt.want) || !errors.As(err, &de) {
			t.Errorf("%s: %v, want a *DecisionError wrapping %v", tt.name, err, tt.want)
		}
	}
	if after, _ := state.Marshal(st); string(after) != string(before) {
		t.Error("failed decisions changed the state")
	}
}

// TestFingerprintBindsExactDecision has the model reuse a call ID with
// other arguments after the decision: the tool does not run.
func TestFingerprintBindsExactDecision(t *testing.T) {
	t.Parallel()
	danger := tool("danger")
	var n atomic.Int32
	model := pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		args := `{"n":1}`
		if n.Add(1) > 1 {
			args = `{"n":2}`
		}
		return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc", "call_same", "danger", args)}}, nil
	})
	a := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{danger}}
	r := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("danger"))))
	res, err := r.Run(context.Background(), a, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	st := res.State()
	if err := st.Approve("call_same"); err != nil {
		t.Fatal(err)
	}
	_, err = r.Resume(context.Background(), a, st)
	var fe *state.FingerprintError
	if !errors.As(err, &fe) || fe.CallID != "call_same" {
		t.Fatalf("Resume = %v, want a *FingerprintError for call_same", err)
	}
	if danger.n.Load() != 1 {
		t.Errorf("danger ran %d times, want 1 (the reused call with other arguments must not run)", danger.n.Load())
	}
}

func TestResumeClaimsOnce(t *testing.T) {
	t.Parallel()
	danger := tool("danger")
	r, a, res := run(t, approval.Require(approval.ByTool("danger")), []pipeline.Tool{danger}, scripted.Call("danger", `{}`))
	store := memstore.New()
	ctx := context.Background()
	if err := store.Save(ctx, res.State()); err != nil {
		t.Fatal(err)
	}
	a1, _ := store.Load(ctx, res.RunID())
	a2, _ := store.Load(ctx, res.RunID())
	for _, st := range []*state.Run{a1, a2} {
		if err := st.Approve(res.Interruptions()[0].CallID); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, st := range []*state.Run{a1, a2} {
		wg.Go(func() { _, errs[i] = approval.Resume(ctx, store, r, a, st) })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), state.ErrConflict) {
		t.Fatalf("errors %v, want exactly one ErrConflict", errs)
	}
	if danger.n.Load() != 1 {
		t.Errorf("danger ran %d times", danger.n.Load())
	}
}

// TestConcurrentDecisionsConflict is issue 34 point 5: of two workers that
// Load → decide → Resume one call at the same moment, the loser's error
// matches state.ErrConflict whichever way it lost, and names the state
// package once: it decided on a copy loaded before the winner's claim (and
// its claim loses the compare-and-swap), or it loaded the checkpoint after
// that claim and finds the call decided (state.ErrAlreadyDecided too).
func TestConcurrentDecisionsConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (*pipeline.Runner, *pipeline.Agent, counted, state.Store, string, string) {
		danger := tool("danger")
		r, a, res := run(t, approval.Require(approval.ByTool("danger")), []pipeline.Tool{danger}, scripted.Call("danger", `{}`))
		store := memstore.New()
		if err := store.Save(ctx, res.State()); err != nil {
			t.Fatal(err)
		}
		return r, a, danger, store, res.RunID(), res.Interruptions()[0].CallID
	}
	decide := func(store state.Store, r *pipeline.Runner, a *pipeline.Agent, runID, callID string, verdict bool) error {
		st, err := store.Load(ctx, runID)
		if err != nil {
			return err
		}
		if verdict {
			err = st.Approve(callID)
		} else {
			err = st.Reject(callID, "no")
		}
		if err != nil {
			return err
		}
		_, err = approval.Resume(ctx, store, r, a, st)
		return err
	}
	check := func(t *testing.T, err error, danger counted) {
		t.Helper()
		if !errors.Is(err, state.ErrConflict) {
			t.Errorf("the loser's error %v does not match state.ErrConflict", err)
		}
		if msg := err.Error(); strings.Count(msg, "state: ") > 1 {
			t.Errorf("the loser's error %q names the state package twice", msg)
		}
		if n := danger.n.Load(); n > 1 {
			t.Errorf("danger ran %d times", n)
		}
	}

	t.Run("loaded after the claim", func(t *testing.T) {
		t.Parallel()
		r, a, danger, store, runID, callID := setup(t)
		if err := decide(store, r, a, runID, callID, true); err != nil {
			t.Fatal(err)
		}
		err := decide(store, r, a, runID, callID, false)
		if !errors.Is(err, state.ErrAlreadyDecided) {
			t.Errorf("error %v, want state.ErrAlreadyDecided too", err)
		}
		check(t, err, danger)
	})
	t.Run("at once", func(t *testing.T) {
		t.Parallel()
		for range 20 {
			r, a, danger, store, runID, callID := setup(t)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Go(func() { errs[i] = decide(store, r, a, runID, callID, i == 0) })
			}
			wg.Wait()
			if (errs[0] == nil) == (errs[1] == nil) {
				t.Fatalf("errors %v, want exactly one", errs)
			}
			check(t, errors.Join(errs...), danger)
		}
	})
}
