package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// TestTwoWorkersResumeOneCheckpoint: two workers load the same approved
// checkpoint and resume it at once; the claim lets exactly one go on, the
// other gets state.ErrConflict before anything runs, and the approved
// transfer runs once. The loser's state is stale (state.ErrStale): its
// claim fails, or, if the winner already committed, the session refuses
// it before the claim.
func TestTwoWorkersResumeOneCheckpoint(t *testing.T) {
	ctx := context.Background()
	w := newWorld()
	pauseAtTransfer(t, w, true)
	procs := []*process{newProcess(t, w, "a", true), newProcess(t, w, "b", true)}
	runs := make([]*state.Run, len(procs))
	for i := range procs {
		var err error
		if runs[i], err = w.states.Load(ctx, runID); err != nil { // both at the same version
			t.Fatal(err)
		}
	}
	errs := make([]error, len(procs))
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i, p := range procs {
		wg.Go(func() {
			<-start
			_, errs[i] = p.runner.Resume(ctx, p.agent, runs[i])
		})
	}
	close(start)
	wg.Wait()
	var ok, conflicts int
	for _, err := range errs {
		var se *checkpoint.SaveError
		switch {
		case err == nil:
			ok++
		case errors.Is(err, state.ErrConflict) && errors.Is(err, state.ErrStale) &&
			(!errors.As(err, &se) || se.Stage == checkpoint.StageClaim):
			conflicts++
		default:
			t.Errorf("a worker failed: %v", err)
		}
	}
	if diff := cmp.Diff([2]int{1, 1}, [2]int{ok, conflicts}); diff != "" {
		t.Errorf("(went on, conflicts at the claim) mismatch (-want +got):\n%s", diff)
	}
	if n := len(w.effects.Keys("transfer")); n != 1 {
		t.Errorf("transfer ran %d times, want once", n)
	}
	checkSession(t, w)
}

// TestStartSameRunTwice: a second worker starting a run ID that another
// worker started gets state.ErrConflict at its claim, before its model
// call, and appends nothing.
func TestStartSameRunTwice(t *testing.T) {
	ctx := context.Background()
	w := newWorld()
	pauseAtTransfer(t, w, true)
	before, err := w.sessions.List(ctx, sessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := newProcess(t, w, "late", true)
	_, err = p.runner.Run(ctx, p.agent, pipeline.UserInput("Pay invoice 7."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
	var se *checkpoint.SaveError
	if !errors.Is(err, state.ErrConflict) || !errors.As(err, &se) || se.Stage != checkpoint.StageClaim {
		t.Fatalf("second start = %v, want state.ErrConflict at the claim", err)
	}
	if len(p.model.Calls()) != 0 {
		t.Errorf("the losing worker asked the model %d times", len(p.model.Calls()))
	}
	after, err := w.sessions.List(ctx, sessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the session went from %d to %d items", len(before), len(after))
	}
}

// TestLostRunStops: while worker A runs the payment, worker B takes the
// run over (it saves the checkpoint). A's next save, before the payment's
// commit, fails with state.ErrConflict; A stops and appends nothing more,
// and no save of A's reaches the store after the conflict (the run's end
// save returns the conflict without trying again); B finishes the run,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T) {
	ctx := context.Background()
	w := newWorld()
	pauseAtTransfer(t, w, true)
	a := newProcess(t, w, "a", true)
	var triesAtTakeover int64
	a.inTool = func(_ *process, c *pipeline.ToolCall) {
		if c.Name != "pay" {
			return
		}
		run, err := w.states.Load(ctx, runID)
		if err == nil {
			err = w.states.Save(ctx, run) // B claims the run
		}
		if err != nil {
			t.Errorf("take over: %v", err)
		}
		triesAtTakeover = a.tries.Load()
	}
	_, err := a.cp.Resume(ctx, a.runner, a.agent, runID)
	var se *checkpoint.SaveError
	if !errors.Is(err, state.ErrConflict) || !errors.As(err, &se) || se.Stage != checkpoint.StageAppend {
		t.Fatalf("worker A = %v, want a conflict at the save before an append", err)
	}
	if n := a.tries.Load() - triesAtTakeover; n != 1 {
		t.Errorf("worker A tried %d saves after the takeover, want 1 (the one that conflicted)", n)
	}
	if _, ok, err := w.sessions.Lookup(ctx, sessionID, runID, 0); err != nil || ok {
		t.Fatalf("lookup: %v %v", ok, err)
	}
	b := newProcess(t, w, "b", true)
	res, err := b.cp.Resume(ctx, b.runner, b.agent, runID)
	if err != nil {
		t.Fatalf("worker B: %v", err)
	}
	if res.FinalOutput() != finalAnswer {
		t.Errorf("final output %q, want %q", res.FinalOutput(), finalAnswer)
	}
	if keys := w.effects.Keys("pay"); len(keys) != 2 || distinct(keys) != 1 {
		t.Errorf("pay ran under keys %v, want twice under one key", keys)
	}
	if diff := cmp.Diff([]string{"Transferred; now paying the invoice.", finalAnswer}, checkSession(t, w)); diff != "" {
		t.Errorf("session messages mismatch (-want +got):\n%s", diff)
	}
}

// TestCrashAfterHandoffCommit: a crash right after the commit of a turn
// that handed off resumes with the agent handed off to, which answers; the
// agent that handed off is not asked again.
func TestCrashAfterHandoffCommit(t *testing.T) {
	ctx := context.Background()
	var triageCalls, billingCalls atomic.Int64
	agents := func(*process) *pipeline.Agent {
		billing := &pipeline.Agent{Name: "billing", Model: pipeline.ModelFunc(func(context.Context, *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			billingCalls.Add(1)
			return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_b", "Billing here.")}}, nil
		})}
		return &pipeline.Agent{
			Name:     "triage",
			Handoffs: []pipeline.Handoff{{Agent: billing}},
			Model: pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				n := triageCalls.Add(1)
				id := strconv.FormatInt(n, 10)
				return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc_"+id, "call_"+id, pipeline.HandoffToolName("billing"), `{}`)}}, nil
			}),
		}
	}
	w := newWorld()
	p1 := newProcess(t, w, "p1", true, withAgent(agents))
	p1.afterAppend = func(p *process, items []state.Item) {
		for _, it := range items {
			if it.Kind() == state.KindHandoffOutput {
				p.crash()
			}
		}
	}
	_, err := p1.runner.Run(ctx, p1.agent, pipeline.UserInput("My invoice is wrong."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
	if !errors.Is(err, errCrashed) {
		t.Fatalf("the armed worker returned %v, want it to crash", err)
	}
	// A dead process does nothing more; this one only stopped writing, so
	// count the model calls of the recovery alone.
	triageCalls.Store(0)
	billingCalls.Store(0)
	p2 := newProcess(t, w, "p2", true, withAgent(agents))
	res, err := p2.cp.Resume(ctx, p2.runner, p2.agent, runID)
	if err != nil {
		t.Fatalf("recovery: %v", err)
	}
	if res.FinalOutput() != "Billing here." || res.LastAgent().Name != "billing" {
		t.Errorf("recovery ended with %q from %q, want billing's answer", res.FinalOutput(), res.LastAgent().Name)
	}
	if diff := cmp.Diff([2]int64{0, 1}, [2]int64{triageCalls.Load(), billingCalls.Load()}); diff != "" {
		t.Errorf("(triage, billing) model calls mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Billing here."}, checkSession(t, w)); diff != "" {
		t.Errorf("session messages mismatch (-want +got):\n%s", diff)
	}
}

// TestHandoffCommitFailureKeepsAgent: when the commit of a handoff turn
// fails (an append error, not a crash), the run keeps the agent that
// handed off, as the runner does, so that resuming replays the handoff.
func TestHandoffCommitFailureKeepsAgent(t *testing.T) {
	ctx := context.Background()
	billing := &pipeline.Agent{Name: "billing", Model: scripted.New(scripted.Reply("Billing here."))}
	triage := &pipeline.Agent{
		Name: "triage", Handoffs: []pipeline.Handoff{{Agent: billing}},
		Model: scripted.New(scripted.CallTool(pipeline.HandoffToolName("billing"), `{}`)),
	}
	states := memstore.New()
	sessions := faulty.New(memory.New(), faulty.FailBefore(2)) // the input lands; the handoff's commit fails
	cp := checkpoint.New(states, checkpoint.WithSession(sessions))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	_, err := runner.Run(ctx, triage, pipeline.UserInput("My invoice is wrong."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
	if !errors.Is(err, faulty.ErrInjected) {
		t.Fatalf("run = %v, want the injected append failure", err)
	}
	run, err := states.Load(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Agent() != "triage" {
		t.Errorf("checkpoint agent %q after a failed handoff commit, want triage", run.Agent())
	}
	res, err := cp.Resume(ctx, runner, triage, runID)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.FinalOutput() != "Billing here." {
		t.Errorf("final output %q, want billing's answer", res.FinalOutput())
	}
}

// TestDroppedOutputStaysOutAfterCrash: the first final answer is
// abandoned (its turn is cancelled before the commit, so the persistence
// middleware drops it), the run is resumed and answers again, and the
// worker crashes right after that final commit. Completing the commit
// appends exactly what persistence was appending: the dropped answer never
// reaches the session, although it sits above the session watermark.
func TestDroppedOutputStaysOutAfterCrash(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int64
	agent := func(*process) *pipeline.Agent {
		return &pipeline.Agent{Name: "writer", Model: pipeline.ModelFunc(func(context.Context, *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			n := calls.Add(1)
			return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_"+strconv.FormatInt(n, 10), "Answer "+strconv.FormatInt(n, 10)+".")}}, nil
		})}
	}
	var cancelled atomic.Bool
	cancelFirstTurn := pipeline.Middleware{Name: "cancel", Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			err := next.ServeTurn(ctx, t)
			if cancelled.CompareAndSwap(false, true) {
				return context.Canceled // the turn decided, then its run was cancelled
			}
			return err
		})
	}}
	w := newWorld()
	p1 := newProcess(t, w, "p1", true, withAgent(agent, cancelFirstTurn))
	if _, err := p1.runner.Run(ctx, p1.agent, pipeline.UserInput("Answer me."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID)); !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v, want it cancelled", err)
	}
	p1.afterAppend = func(p *process, _ []state.Item) { p.crash() }
	if _, err := p1.cp.Resume(ctx, p1.runner, p1.agent, runID); !errors.Is(err, errCrashed) {
		t.Fatalf("the armed worker returned %v, want it to crash", err)
	}
	run, err := w.states.Load(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if wm := run.SessionWatermark(); wm != 1 {
		t.Fatalf("the crashed checkpoint's watermark is %d, want 1 (the input): the dropped answer is above it", wm)
	}
	p2 := newProcess(t, w, "p2", true, withAgent(agent))
	_, err = p2.cp.Resume(ctx, p2.runner, p2.agent, runID)
	if fe, ok := errors.AsType[*checkpoint.FinishedError](err); !ok || !fe.Completed || fe.FinalOutput != "Answer 2." {
		t.Fatalf("recovery = %v, want the final commit of answer 2 completed", err)
	}
	if diff := cmp.Diff([]string{"Answer 2."}, checkSession(t, w)); diff != "" {
		t.Errorf("session messages mismatch (-want +got):\n%s", diff)
	}
	if calls.Load() != 2 {
		t.Errorf("the model was asked %d times, want 2", calls.Load())
	}
}

// TestAgentToolRunIsNotCheckpointedAlone: a nested run (an agent used as
// a tool) travels in the outer checkpoint and gets none of its own.
func TestAgentToolRunIsNotCheckpointedAlone(t *testing.T) {
	ctx := context.Background()
	helper := &pipeline.Agent{Name: "helper", Model: scripted.New(scripted.Reply("42"))}
	outer := &pipeline.Agent{
		Name:  "outer",
		Tools: []pipeline.Tool{pipeline.AgentTool(helper)},
		Model: scripted.New(scripted.CallTool("helper", `{"input":"answer?"}`), scripted.Reply("It is 42.")),
	}
	states := memstore.New()
	cp := checkpoint.New(states, checkpoint.WithSession(memory.New()))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	res, err := runner.Run(ctx, outer, pipeline.UserInput("Ask the helper."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
	if err != nil || res.FinalOutput() != "It is 42." {
		t.Fatalf("run = %q, %v", res.FinalOutput(), err)
	}
	if _, err := states.Load(ctx, runID); err != nil {
		t.Errorf("outer checkpoint: %v", err)
	}
	nested := runID + "/" + res.State().Items().At(1).CallID()
	if _, err := states.Load(ctx, nested); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("nested run %s checkpoint: %v, want state.ErrNotFound", nested, err)
	}
}

// TestWiringPanics: wiring mistakes panic at construction.
func TestWiringPanics(t *testing.T) {
	tests := []struct {
		name string
		give func()
	}{
		{name: "nil state store", give: func() { checkpoint.New(nil) }},
		{name: "nil session store", give: func() { checkpoint.New(memstore.New(), checkpoint.WithSession(nil)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if v := recover(); v == nil || !strings.HasPrefix(fmt.Sprint(v), "checkpoint: ") {
					t.Errorf("panic = %v, want a \"checkpoint: \" panic", v)
				}
			}()
			tt.give()
		})
	}
}
