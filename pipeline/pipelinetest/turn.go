package pipelinetest

import (
	"slices"
	"testing"

	"github.com/turnkit/turnkit/internal/key"
	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A TurnOption configures a turn built by [NewTurn].
type TurnOption interface{ apply(*turnConfig) }

type turnOption func(*turnConfig)

func (f turnOption) apply(c *turnConfig) { f(c) }

type turnConfig struct {
	agent    *pipeline.Agent
	run      *state.Run
	number   int
	input    []state.Item
	history  []state.Item
	response []state.Item
	events   *EventLog
}

// WithAgent sets the agent serving the turn (default: an agent named
// "agent" with no model and no tools). Calls in [WithResponse] find their
// tools, handoffs and terminal status on it.
func WithAgent(a *pipeline.Agent) TurnOption {
	return turnOption(func(c *turnConfig) {
		if a != nil {
			c.agent = a
		}
	})
}

// WithRun makes the turn record into run instead of a new empty run with
// ID "run_test".
func WithRun(run *state.Run) TurnOption {
	return turnOption(func(c *turnConfig) {
		if run != nil {
			c.run = run
		}
	})
}

// WithNumber sets the turn's number (default: the run's turn count plus
// one). The run records that the turn started.
func WithNumber(n int) TurnOption { return turnOption(func(c *turnConfig) { c.number = n }) }

// WithInput places items as the run's input on this turn, as a run's first
// turn has it. Repeated calls add up.
func WithInput(items ...state.Item) TurnOption {
	return turnOption(func(c *turnConfig) { c.input = append(c.input, items...) })
}

// WithHistory sets the session history the run's items follow. Repeated
// calls add up.
func WithHistory(items ...state.Item) TurnOption {
	return turnOption(func(c *turnConfig) { c.history = append(c.history, items...) })
}

// WithResponse gives the turn a model response, placed by the core's own
// code as it places one after the model stage: the items at the next
// positions in order, handoff calls re-kinded, one position reserved per
// call for its output, the run's response boundary set, and
// [pipeline.Turn.Calls] built with their tools, output positions and
// terminal status (Results all nil), and [pipeline.Turn.MayEndRun] set. The
// items must not have positions yet. Repeated calls add up.
func WithResponse(items ...state.Item) TurnOption {
	return turnOption(func(c *turnConfig) { c.response = append(c.response, items...) })
}

// WithEvents makes the turn stream its events into log.
func WithEvents(log *EventLog) TurnOption {
	return turnOption(func(c *turnConfig) { c.events = log })
}

// NewTurn returns a turn for a unit test of a middleware, as the runner
// would hand it to the turn stage. Without options it is turn 1 of a new
// run "run_test" of an agent named "agent", with no response: the state of
// a turn before its model call. With [WithResponse] it is the state of a
// turn after its model call, ready for the tool stage. It fails tb if the
// items cannot be placed.
func NewTurn(tb testing.TB, opts ...TurnOption) *pipeline.Turn {
	tb.Helper()
	c := turnConfig{agent: &pipeline.Agent{Name: "agent"}}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	run := c.run
	if run == nil {
		run = state.NewRun("run_test", c.agent.Name)
	}
	if len(c.history) > 0 {
		if err := runcore.SetHistory(run, c.history); err != nil {
			tb.Fatalf("pipelinetest: NewTurn: %v", err)
		}
	}
	n := c.number
	if n == 0 {
		n = run.Turn() + 1
	}
	runcore.SetTurn(run, n)
	var placed []state.Item
	if len(c.input) > 0 {
		placed = runcore.AddInput(run, c.input...)
	}

	for _, it := range c.response {
		if it.Seq() != 0 {
			tb.Fatalf("pipelinetest: NewTurn: response item %s already has a position", it)
		}
	}
	var emit func(pipeline.Event)
	if c.events != nil {
		emit = c.events.Emit
	}
	t := core.NewTurn(run, c.agent, n, emit)
	t.Input = placed
	if len(c.response) == 0 {
		return t
	}
	resp := &pipeline.ModelResponse{ID: "resp_test", Model: "pipelinetest", Items: c.response}
	if err := core.PlaceResponse(t, resp); err != nil {
		tb.Fatalf("pipelinetest: NewTurn: %v", err)
	}
	return t
}

// NewModelCall returns the model call the runner would make for t, made by
// the runner's own code: the agent's instructions (not its
// InstructionsFunc), tools and handoffs, settings and output type, and the
// run's model input. The call streams if t does.
func NewModelCall(tb testing.TB, t *pipeline.Turn) *pipeline.ModelCall {
	tb.Helper()
	if t == nil || t.Agent == nil || t.Run == nil {
		tb.Fatalf("pipelinetest: NewModelCall: the turn needs an agent and a run")
	}
	return core.NewModelCall(t)
}

// NewRunCall returns the request the runner hands the run stage when a
// run starts, for a unit test of a run middleware: [WithAgent], [WithRun]
// and [WithEvents] apply as for [NewTurn]; [WithInput] gives the run's
// input, which the run stage places (NewRunCall places nothing); the other
// options are ignored. Without options it is the start of a new run
// "run_test" of an agent named "agent", with no input. Set the result's
// Resumed field to test a resumption.
func NewRunCall(tb testing.TB, opts ...TurnOption) *pipeline.RunCall {
	tb.Helper()
	c := turnConfig{agent: &pipeline.Agent{Name: "agent"}}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	run := c.run
	if run == nil {
		run = state.NewRun("run_test", c.agent.Name)
	}
	var emit func(pipeline.Event)
	if c.events != nil {
		emit = c.events.Emit
	}
	return core.NewRunCall(run, c.agent, slices.Clone(c.input), emit)
}

// core is the runner's own code that builds turns (see [pipeline.Core]).
var core = pipeline.Core(key.Make())
