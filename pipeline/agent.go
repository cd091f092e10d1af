package pipeline

import (
	"context"
	"slices"
	"strings"

	"github.com/turnkit/turnkit/state"
)

// An Agent is a model with instructions, tools and handoffs. Agents are
// plain values configured before a run; the runner never changes them, so
// one Agent may serve many runs at once.
type Agent struct {
	// Name identifies the agent; a checkpoint names its current agent by it,
	// so names must be unique among the agents a run can reach.
	Name         string
	Instructions string
	// InstructionsFunc, if set, computes the instructions per turn instead.
	InstructionsFunc func(ctx context.Context, t *Turn) (string, error)
	Model            Model
	Settings         ModelSettings
	Tools            []Tool
	Handoffs         []Handoff
	// ToolUse decides what happens after the tools of a response ran. The
	// zero value runs the model again.
	ToolUse ToolUseBehavior
	// Output, if set, is the Go type of the agent's final output: the model
	// is asked for JSON that follows its schema, and the final output (a
	// final message, a terminal tool's output) is decoded into it; read it
	// with [OutputAs]. Nil means plain text.
	Output OutputType
}

// tool returns the agent's tool with the given name.
func (a *Agent) tool(name string) Tool {
	for _, t := range a.Tools {
		if t.Spec().Name == name {
			return t
		}
	}
	if server, _, ok := state.SplitMCPApprovalName(name); ok {
		return a.tool("mcp:" + server) // an approval request goes to its server's tool
	}
	return nil
}

// handoff returns the agent's handoff whose function has the given name.
func (a *Agent) handoff(name string) *Handoff {
	for i := range a.Handoffs {
		if a.Handoffs[i].toolName() == name {
			return &a.Handoffs[i]
		}
	}
	return nil
}

// find returns the agent named name reachable from a through handoffs.
func (a *Agent) find(name string) *Agent {
	seen := map[*Agent]bool{}
	var walk func(*Agent) *Agent
	walk = func(x *Agent) *Agent {
		if x == nil || seen[x] {
			return nil
		}
		seen[x] = true
		if x.Name == name {
			return x
		}
		for _, h := range x.Handoffs {
			if f := walk(h.Agent); f != nil {
				return f
			}
		}
		return nil
	}
	return walk(a)
}

// A Handoff lets an agent transfer the conversation to another agent. The
// model sees a function named transfer_to_<agent name>; calling it ends the
// turn, and the next turn runs the target agent. When a response calls
// several handoffs, the first is taken and the others are answered as
// ignored.
//
// A handoff may carry arguments: with Input set, the model's call follows
// the input type's schema, and its arguments are validated and decoded
// before anything of the turn runs (tool calls included). Arguments that
// do not match are an [*ArgumentError], handled like a tool's bad
// arguments: by default the run ends with it (the call stays unanswered,
// so a resume meets it again); with [WithInvalidCallsToModel] it is the
// call's output, the handoff is not taken, and the same agent's model
// answers again. The decoded value reaches OnHandoff and is recorded in
// the run's state (see [Handoffs], [HandoffInputAs]), so it survives a
// checkpoint.
//
// # A final message beside a handoff
//
// A response may hold both a final message (for an agent with an output
// type, its JSON) and a handoff call. The handoff wins: the run goes on
// with the target, and the message is the handing-off agent's answer, not
// a final output. For an agent with an output type it is validated and
// decoded into that type before the handoff is taken, exactly as a final
// output would be; the value reaches OnHandoff as [HandoffCall].Output,
// and the message is recorded with the handoff, so [HandoffOutputAs]
// returns the value, live or from a checkpoint: one model call gives both
// a typed classification and the transfer. A message that does not decode
// (a preamble such as "Let me pass you to billing.") or refuses does not
// stop the handoff: OnHandoff gets the [*OutputError] (or [*RefusalError])
// as [HandoffCall].OutputErr, and HandoffOutputAs returns it. [OutputAs]
// still returns the run's final output, the last agent's; output
// guardrails do not check the answer beside a handoff.
type Handoff struct {
	Agent *Agent
	// ToolName overrides the function name the model sees.
	ToolName string
	// Description overrides the function's description.
	Description string
	// InputFilter, if set, rewrites what the target agent sees: it gets the
	// model input at the handoff (handoff call and output included) and
	// returns the items the target's model calls start from.
	InputFilter func(ctx context.Context, in HandoffInput) ([]state.Item, error)
	// Input, if set, is the type of the call's arguments (see above);
	// package tool builds one (tool.Input, or tool.Handoff for the whole
	// handoff). Nil means no arguments.
	Input InputType
	// OnHandoff, if set, is called when the handoff is taken, after the
	// handoff is recorded in the run's state and before the input filter
	// and the target agent's first model call. An error stops the run
	// with a [*HandoffError]; a resume takes the handoff again and calls
	// OnHandoff again, so it runs at least once per handoff, and may run
	// again after a failure or a crash. It must be safe for concurrent
	// use.
	OnHandoff func(ctx context.Context, c *HandoffCall) error
	// Enabled, if set, offers the handoff only on the turns it reports
	// true for (see [Condition]).
	Enabled Condition
}

// HandoffInput is what a handoff input filter gets.
type HandoffInput struct {
	From, To *Agent
	// History is the model input at the handoff, call and output included.
	History state.Items
}

func (h *Handoff) toolName() string {
	if h.ToolName != "" {
		return h.ToolName
	}
	return HandoffToolName(h.Agent.Name)
}

// HandoffToolName returns the default function name of a handoff to the
// named agent: "transfer_to_" and the name in lower snake case.
func HandoffToolName(agent string) string {
	var b strings.Builder
	b.WriteString("transfer_to_")
	for _, r := range strings.ToLower(agent) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func (h *Handoff) spec() ToolSpec {
	desc := h.Description
	if desc == "" {
		desc = "Handoff to the " + h.Agent.Name + " agent to handle the request."
	}
	if h.Input != nil {
		in := h.Input.InputSpec()
		return ToolSpec{Name: h.toolName(), Description: desc, Parameters: in.Schema, Strict: in.Strict}
	}
	return ToolSpec{
		Name:        h.toolName(),
		Description: desc,
		Parameters:  []byte(`{"type":"object","properties":{},"required":[],"additionalProperties":false}`),
		Strict:      true,
	}
}

// A ToolUseBehavior decides, after the tools of a response ran, whether
// the run ends with a tool's output or the model runs again. The zero value
// runs the model again; build the others with [StopOnFirstTool],
// [StopAtTools] and [DecideToolUse].
type ToolUseBehavior struct {
	mode   uint8
	names  []string
	decide ToolDecider
}

const (
	toolUseRunAgain uint8 = iota
	toolUseStopFirst
	toolUseStopAt
	toolUseCustom
)

// A ToolDecider decides from a turn's tool outcomes (in call order) whether
// the run ends, and with which final output.
type ToolDecider func(ctx context.Context, t *Turn, outcomes []ToolOutcome) (final string, done bool, err error)

// A ToolOutcome pairs a call with its result, for a [ToolDecider].
type ToolOutcome struct {
	Call   *ToolCall
	Result *ToolResult
}

// RunAgain returns the default behaviour: the model runs again with the
// tools' outputs.
func RunAgain() ToolUseBehavior { return ToolUseBehavior{} }

// StopOnFirstTool ends the run with the output of the response's first
// tool call.
func StopOnFirstTool() ToolUseBehavior { return ToolUseBehavior{mode: toolUseStopFirst} }

// StopAtTools ends the run with the output of the first call to one of the
// named tools; calls to other tools run the model again.
func StopAtTools(names ...string) ToolUseBehavior {
	return ToolUseBehavior{mode: toolUseStopAt, names: slices.Clone(names)}
}

// DecideToolUse lets f decide. Every call of a response may then end the
// run, so persistence holds them all until the decision and its verdict.
func DecideToolUse(f ToolDecider) ToolUseBehavior {
	if f == nil {
		panic("pipeline: DecideToolUse called with a nil ToolDecider")
	}
	return ToolUseBehavior{mode: toolUseCustom, decide: f}
}

// MayEnd reports whether a call to the named tool may end the run.
func (b ToolUseBehavior) MayEnd(tool string) bool {
	switch b.mode {
	case toolUseStopFirst, toolUseCustom:
		return true
	case toolUseStopAt:
		return slices.Contains(b.names, tool)
	}
	return false
}

// decideFinal applies the behaviour to a turn's calls and results.
func (b ToolUseBehavior) decideFinal(ctx context.Context, t *Turn) (string, bool, error) {
	switch b.mode {
	case toolUseStopFirst:
		if len(t.Calls) > 0 {
			return t.Results[0].Output, true, nil
		}
	case toolUseStopAt:
		for i, c := range t.Calls {
			if slices.Contains(b.names, c.Name) {
				return t.Results[i].Output, true, nil
			}
		}
	case toolUseCustom:
		out := make([]ToolOutcome, len(t.Calls))
		for i, c := range t.Calls {
			out[i] = ToolOutcome{Call: c, Result: t.Results[i]}
		}
		return b.decide(ctx, t, out)
	}
	return "", false, nil
}
