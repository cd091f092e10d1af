package torture

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A Model is a [pipeline.Model] that plays the scripts of a [Plan]. It
// reads the step a run is at from the run's own items (the step named in
// the arguments of its last tool call, plus one), so a model call retried
// after a crash answers the same step; like a real model it gives every
// item a fresh ID. The first call of a flaky step fails (see
// [RunSpec.Flaky]). Odd steps start with reasoning, even ones with a
// message. It calls [HookModel] in the middle of each call. A call served
// by another agent than the script says (see [RunSpec.AgentAt]) fails: a
// resumed run must go on with the agent it was handed off to.
type Model struct {
	runs  map[string]RunSpec
	hooks Hooks

	failed  sync.Map // run ID and step of the flaky calls failed in this process
	retries atomic.Int64
}

// FailedMarker is in the partial answer a flaky model call returns beside
// its error (see [RunSpec.Flaky]); no checkpoint and no session may ever
// hold it.
const FailedMarker = "[failed attempt]"

// errFlaky is the cause of a flaky model call's error.
var errFlaky = errors.New("torture: model: overloaded (a planned flaky call)")

// Retries returns how many model calls failed as planned, each then made
// again by the retry middleware.
func (m *Model) Retries() int64 { return m.retries.Load() }

var _ pipeline.Model = (*Model)(nil)

// NewModel returns a model for the runs of plan; hooks may be nil.
func NewModel(plan Plan, hooks Hooks) *Model {
	m := &Model{runs: make(map[string]RunSpec, len(plan.Runs)), hooks: orNop(hooks)}
	for _, r := range plan.Runs {
		m.runs[r.ID] = r
	}
	return m
}

// callArgs are the arguments of every torture tool call.
type callArgs struct {
	Run    string `json:"run"`
	Step   int    `json:"step"`
	Index  int    `json:"index"`
	Reject bool   `json:"reject,omitempty"`
	// Trip asks the finish tool to put [TripMarker] in its output.
	Trip bool `json:"trip,omitempty"`
	// Slow makes a lookup run past its time limit.
	Slow bool `json:"slow,omitempty"`
}

// Respond answers the run's next step.
func (m *Model) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	run := c.Turn.Run
	spec, ok := m.runs[run.ID()]
	if !ok {
		return nil, fmt.Errorf("torture: model: run %q is not in the plan", run.ID())
	}
	step, err := lastStep(run)
	if err != nil {
		return nil, err
	}
	step++
	if step > len(spec.Steps)+1 {
		return nil, fmt.Errorf("torture: model: run %s called for step %d after its last response (step %d)", spec.ID, step, len(spec.Steps)+1)
	}
	if want := spec.AgentAt(step); c.Turn.Agent == nil || c.Turn.Agent.Name != want {
		return nil, fmt.Errorf("torture: model: run %s step %d served by agent %q, want %q", spec.ID, step, agentName(c.Turn.Agent), want)
	}
	if err := m.checkHistory(spec, step, c.Input); err != nil {
		return nil, err
	}
	if spec.IsFlaky(step) {
		if _, failed := m.failed.LoadOrStore(fmt.Sprintf("%s/%d", spec.ID, step), true); !failed {
			m.retries.Add(1)
			partial := &pipeline.ModelResponse{ID: "resp_" + newID(), Model: "torture", Items: []state.Item{
				state.AssistantMessage("msg_"+newID(), "Partial answer "+FailedMarker),
			}}
			return partial, &pipeline.ModelError{Status: 503, Retryable: true, Err: errFlaky}
		}
	}
	m.hooks.At(ctx, HookModel)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp := &pipeline.ModelResponse{ID: "resp_" + newID(), Model: "torture", Usage: state.Usage{Requests: 1}}
	if step > len(spec.Steps) && spec.Finish {
		args, err := json.Marshal(callArgs{Run: spec.ID, Step: step, Trip: spec.Trip})
		if err != nil {
			return nil, err
		}
		resp.Items = []state.Item{
			state.AssistantMessage("msg_"+newID(), "Finishing run "+spec.ID+"."),
			state.ToolCall("fc_"+newID(), "call_"+newID(), ToolFinish, string(args)),
		}
		return resp, nil
	}
	if step > len(spec.Steps) {
		resp.Items = []state.Item{state.AssistantMessage("msg_"+newID(), spec.Final)}
		return resp, nil
	}
	if step%2 == 1 {
		resp.Items = append(resp.Items, state.Reasoning("rs_"+newID(), fmt.Sprintf("step %d of run %s", step, spec.ID)))
	} else {
		resp.Items = append(resp.Items, state.AssistantMessage("msg_"+newID(), fmt.Sprintf("Working on step %d.", step)))
	}
	for i, cs := range spec.Steps[step-1] {
		if cs.Handoff {
			to := AgentB
			if c.Turn.Agent.Name == AgentB {
				to = AgentA
			}
			resp.Items = append(resp.Items, state.ToolCall("fc_"+newID(), "call_"+newID(), pipeline.HandoffToolName(to), "{}"))
			continue
		}
		args, err := json.Marshal(callArgs{Run: spec.ID, Step: step, Index: i, Reject: cs.Reject, Slow: cs.Slow})
		if err != nil {
			return nil, err
		}
		resp.Items = append(resp.Items, state.ToolCall("fc_"+newID(), "call_"+newID(), cs.Tool, string(args)))
	}
	return resp, nil
}

// errModelInput is the cause of a model call refused because its input
// is not what the run's live calls saw.
var errModelInput = errors.New("torture: model: wrong input")

// checkHistory checks the input of a call of a run that starts after
// another (see [WithPops]): the model is never called again after a pop
// into the run's history, and otherwise sees the earlier run's input and
// final message, then the run's input, each once and in that order, as
// the live run did, though the run's own input was popped from the
// session.
func (m *Model) checkHistory(spec RunSpec, step int, input state.Items) error {
	if spec.After == "" {
		return nil
	}
	if spec.Pop == PopHistory && step > 1 {
		return fmt.Errorf("%w: run %s called for step %d after a pop into its history", errModelInput, spec.ID, step)
	}
	first := m.runs[spec.After]
	want := []string{first.Input, first.Final, spec.Input}
	var got []string
	for _, it := range input.All() {
		if slices.Contains(want, it.Text()) {
			got = append(got, it.Text())
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%w: run %s step %d: the input holds %q of %q", errModelInput, spec.ID, step, got, want)
	}
	return nil
}

// lastStep returns the step named by the run's last tool call, 0 if none.
func lastStep(run *state.Run) (int, error) {
	items := run.Items()
	for i := items.Len() - 1; i >= 0; i-- {
		it := items.At(i)
		if it.Kind() != state.KindToolCall {
			continue
		}
		var a callArgs
		if err := json.Unmarshal([]byte(it.Text()), &a); err != nil {
			return 0, fmt.Errorf("torture: model: run %s call %s: %w", run.ID(), it.CallID(), err)
		}
		return a.Step, nil
	}
	return 0, nil
}

func agentName(a *pipeline.Agent) string {
	if a == nil {
		return ""
	}
	return a.Name
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
