package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// agentToolExtension prefixes the [state.Run] extension key under which an
// agent used as a tool keeps its paused nested run: the key is the prefix
// followed by the outer call ID, and the value is the nested run's
// checkpoint ([state.Marshal]).
const agentToolExtension = "turnkit.agent_tool/"

// An AgentToolOption configures [AgentTool].
type AgentToolOption interface{ applyAgentTool(*agentTool) }

type agentToolOptionFunc func(*agentTool)

func (f agentToolOptionFunc) applyAgentTool(a *agentTool) { f(a) }

// WithAgentToolName sets the function name the model sees (default: the
// agent's name).
func WithAgentToolName(name string) AgentToolOption {
	return agentToolOptionFunc(func(a *agentTool) {
		if name != "" {
			a.spec.Name = name
		}
	})
}

// WithAgentToolDescription sets the function description the model sees.
func WithAgentToolDescription(desc string) AgentToolOption {
	return agentToolOptionFunc(func(a *agentTool) { a.spec.Description = desc })
}

// WithAgentToolRunner runs the nested agent with r instead of the runner
// serving the outer run. Use it to give the nested run other middleware;
// approvals surface to the outer run only if r's chain requires them.
func WithAgentToolRunner(r *Runner) AgentToolOption {
	return agentToolOptionFunc(func(a *agentTool) { a.runner = r })
}

// AgentTool returns a [Tool] that runs agent as a nested run: the model
// calls it with {"input": "..."}, the nested run starts from that user
// message, and its final output is the call's output.
//
// The nested run is served by the runner serving the outer run (or the one
// set with [WithAgentToolRunner]), with the same middleware. When it pauses
// for approvals, they surface as approvals of the outer run: its
// [state.Run.Pending] lists them with Owner set to the outer call ID and
// CallID qualified as "<owner>/<nested call ID>", so that they are unique.
// The nested run's state is kept in the outer run's extension
// "turnkit.agent_tool/"+callID, so it travels in the outer checkpoint.
// Decide on the outer run ([state.Run.Approve] with the qualified call ID,
// or the "always" forms, which apply to nested calls too) and resume it:
// the call runs again, carries the decisions into the nested run and
// resumes it. Nested runs nest: an agent tool inside an agent tool
// qualifies its call IDs once per level.
//
// The nested run's ID is the outer run ID, "/", and the call ID. Its usage
// is added to the outer run's as it goes, each model call counted once
// across pause and resume. When the outer run streams, the nested run
// streams too, and its events reach the outer stream wrapped in
// [NestedEvent].
//
// The nested run's guardrail results are recorded in the outer run's state
// as the call returns, whatever its outcome (an output, a pause, a
// failure), each once across pause and resume, so they travel in the
// outer checkpoint and reach [Result.State] and [StateOf]. They are told
// apart from the outer run's own results by [state.GuardrailResult.Owner]
// (the outer call ID) and Agent (the nested agent); a tool guardrail's
// CallID is qualified like a nested approval's.
//
// A nested run that fails (a guardrail's tripwire, a model error, the
// turn limit …) fails the call with the nested run's error (a
// [*RunError]), which the outer run treats as any tool's error: by
// default the model sees its text as the call's output
// ([WithToolErrorText]) and the outer run goes on, so a later resume of the
// outer run is not refused for it; with [WithToolErrorsAbort] the outer run
// ends with a [*ToolError] wrapping it (errors.Is sees the tripwire). A
// run stopped by a tripwire stays stopped, nested or not: after an abort
// on a nested tripwire, the nested state stays in the outer state, and a
// resume of the outer run resumes the nested run, whose guardrails refuse
// it with the same tripwire error; the nested agent does not run again.
// (Guardrails in the outer runner's chain with the tripped check's name
// refuse the outer resume even earlier, before any turn runs.)
func AgentTool(agent *Agent, opts ...AgentToolOption) Tool {
	if agent == nil {
		panic("pipeline: AgentTool called with a nil agent")
	}
	a := &agentTool{agent: agent, spec: ToolSpec{
		Name:        agent.Name,
		Description: "Ask the " + agent.Name + " agent.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"What to ask the agent."}},"required":["input"],"additionalProperties":false}`),
		Strict:      true,
	}}
	for _, o := range opts {
		if o != nil {
			o.applyAgentTool(a)
		}
	}
	return a
}

type agentTool struct {
	agent  *Agent
	spec   ToolSpec
	runner *Runner
}

func (a *agentTool) Spec() ToolSpec { return a.spec }

func (a *agentTool) Call(ctx context.Context, c *ToolCall) (string, error) {
	outer := c.Turn.Run
	runner := a.runner
	if runner == nil {
		runner = c.Turn.runner
	}
	if runner == nil {
		return "", fmt.Errorf("pipeline: agent tool %q call %s: no runner", a.spec.Name, c.CallID)
	}
	key := agentToolExtension + c.CallID
	var (
		res *Result
		err error
	)
	if raw, paused := outer.Extension(key); paused {
		nested, uerr := state.Unmarshal(raw)
		if uerr != nil {
			return "", fmt.Errorf("pipeline: agent tool %q call %s: nested state: %w", a.spec.Name, c.CallID, uerr)
		}
		carryDecisions(outer, nested, c.CallID)
		before, guards := nested.Usage(), nested.GuardrailCount()
		res, err = a.resume(ctx, runner, c, nested)
		runcore.AddUsage(outer, usageSince(before, nested.Usage()))
		runcore.AddNestedGuardrails(outer, c.CallID, a.agent.Name, nested.GuardrailResultsSince(guards))
		if err != nil {
			return "", a.failed(outer, c, key, nested, err)
		}
		runcore.ResolveOwned(outer, c.CallID)
		return a.settle(outer, c, key, res, nested)
	}
	var args struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
		return "", &ArgumentError{Tool: c.Name, CallID: c.CallID, Err: err}
	}
	nested := state.NewRun(outer.ID()+"/"+c.CallID, a.agent.Name)
	res, err = a.run(ctx, runner, c, args.Input, nested)
	runcore.AddUsage(outer, nested.Usage())
	runcore.AddNestedGuardrails(outer, c.CallID, a.agent.Name, nested.GuardrailResults())
	if err != nil {
		return "", a.failed(outer, c, key, nested, err)
	}
	return a.settle(outer, c, key, res, nested)
}

// run starts the nested run, streaming it into the outer stream when the
// outer run streams.
func (a *agentTool) run(ctx context.Context, runner *Runner, c *ToolCall, input string, nested *state.Run) (*Result, error) {
	if !c.Turn.Streaming() {
		return runner.Run(ctx, a.agent, UserInput(input), WithState(nested))
	}
	return forward(c, nested, runner.Stream(ctx, a.agent, UserInput(input), WithState(nested)))
}

// resume resumes the nested run, streaming like run.
func (a *agentTool) resume(ctx context.Context, runner *Runner, c *ToolCall, nested *state.Run) (*Result, error) {
	if !c.Turn.Streaming() {
		return runner.Resume(ctx, a.agent, nested)
	}
	return forward(c, nested, runner.ResumeStream(ctx, a.agent, nested))
}

// forward relays a nested stream's events to the outer turn, wrapped, and
// returns the nested run's result. Like Run, the result is non-nil on error
// once the nested run started.
func forward(c *ToolCall, nested *state.Run, events iter.Seq2[Event, error]) (*Result, error) {
	for ev, err := range events {
		if err != nil {
			return &Result{run: nested}, err
		}
		if done, ok := ev.(RunCompleted); ok {
			return done.Result, nil
		}
		c.Turn.Emit(NestedEvent{CallID: c.CallID, Agent: nested.Agent(), Event: ev})
	}
	return &Result{run: nested}, errors.New("pipeline: nested stream ended without a result")
}

// settle records a nested run's outcome in the outer run: on a pause, its
// approvals (qualified) and its state; on a final output, the removal of
// both.
func (a *agentTool) settle(outer *state.Run, c *ToolCall, key string, res *Result, nested *state.Run) (string, error) {
	if !res.Interrupted() {
		outer.SetExtension(key, nil)
		return res.finalOutput, nil
	}
	data, err := state.Marshal(nested)
	if err != nil {
		return "", err
	}
	outer.SetExtension(key, data)
	for _, ap := range res.interruptions {
		ap.CallID = c.CallID + "/" + ap.CallID
		if ap.Owner == "" {
			ap.Owner = c.CallID
		} else {
			ap.Owner = c.CallID + "/" + ap.Owner
		}
		runcore.AddPending(outer, ap)
	}
	return "", fmt.Errorf("%w: agent %q waits for %d decision(s)", ErrToolPending, a.agent.Name, len(res.interruptions))
}

// failed settles a nested run that failed with err and returns err. When
// a guardrail tripped in it and the outer run aborts on tool errors, the
// outer run stops as the nested one did, so the nested state is kept (as
// for a pause): a resume of the outer run resumes the nested run, which
// its guardrails refuse with the same tripwire instead of running the
// nested agent again. Otherwise (a failure the model is told of, or one a
// retry may cure) nothing of the nested run is kept.
func (a *agentTool) failed(outer *state.Run, c *ToolCall, key string, nested *state.Run, err error) error {
	if tripped(err) && c.Turn.runner != nil && c.Turn.runner.cfg.abortOnToolErr {
		if data, merr := state.Marshal(nested); merr == nil {
			outer.SetExtension(key, data)
			return err
		}
	}
	outer.SetExtension(key, nil)
	return err
}

// tripped reports whether err is a guardrail's tripwire, recognised
// without importing the guardrails: it yields a tripped result through
// errors.As.
func tripped(err error) bool {
	g, ok := errors.AsType[interface {
		error
		GuardrailResult() state.GuardrailResult
	}](err)
	return ok && g.GuardrailResult().Tripped
}

// carryDecisions copies the outer run's decisions that concern the nested
// run of call owner into it: exact decisions on its calls, with the call
// IDs unqualified once, and every "always" decision.
func carryDecisions(outer, nested *state.Run, owner string) {
	have := func(d state.Decision) bool {
		for _, x := range nested.Decisions() {
			if x.Always == d.Always && x.Tool == d.Tool && x.CallID == d.CallID && x.Verdict == d.Verdict && x.Answer == d.Answer {
				return true
			}
		}
		return false
	}
	for _, d := range outer.Decisions() {
		switch {
		case d.Always:
		case d.Owner == owner:
			d.CallID, d.Owner = strings.TrimPrefix(d.CallID, owner+"/"), ""
		case strings.HasPrefix(d.Owner, owner+"/"):
			d.CallID, d.Owner = strings.TrimPrefix(d.CallID, owner+"/"), strings.TrimPrefix(d.Owner, owner+"/")
		default:
			continue
		}
		if !have(d) {
			runcore.AddDecision(nested, d)
		}
	}
}

// usageSince returns the usage recorded between two readings of a run's
// totals.
func usageSince(before, after state.Usage) state.Usage {
	return state.Usage{
		Requests:         after.Requests - before.Requests,
		InputTokens:      after.InputTokens - before.InputTokens,
		OutputTokens:     after.OutputTokens - before.OutputTokens,
		ReasoningTokens:  after.ReasoningTokens - before.ReasoningTokens,
		CachedTokens:     after.CachedTokens - before.CachedTokens,
		CacheWriteTokens: after.CacheWriteTokens - before.CacheWriteTokens,
	}
}
