package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A Scenario is one benchmark of the harness.
type Scenario struct {
	// Name identifies the scenario, such as "turn/runner/history=10"; it is
	// the sub-benchmark name under its group's Benchmark func.
	Name string
	// Group is the table section: "turn", "run", "middleware",
	// "checkpoint", "approval", "session", "crashsafe" or "mcp".
	Group string
	// Baseline names the scenario that ratios are taken against, or "" for
	// a scenario that is its own baseline.
	Baseline string
	// PerOp is how many turns (or items, or commits) one b.Loop iteration
	// does; the table divides by it. 1 for turn scenarios.
	PerOp int
	// Unit names what PerOp counts: "turn", "item", "commit", "call" or
	// "op".
	Unit string
	// Skip, when not empty, says why the scenario cannot run here (a
	// package that has not landed, a backend with no server); Bench is nil
	// then.
	Skip string
	// Bench runs the scenario. It reports allocations itself.
	Bench func(b *testing.B)
}

// Histories are the history sizes of the turn scenarios.
var Histories = []int{10, 1_000, 10_000}

// RunLengths are the run lengths, in tool turns, of the run scenarios that
// the peers repeat.
var RunLengths = []int{10, 100, 1_000}

// All returns every scenario in table order: turn, run, middleware,
// checkpoint, approval, session. Scenarios whose packages or servers are
// missing are present with Skip set.
func All() []Scenario {
	var out []Scenario
	out = append(out, TurnScenarios()...)
	out = append(out, RunScenarios()...)
	for _, extra := range extraScenarios {
		out = append(out, extra()...)
	}
	return out
}

// extraScenarios are the scenario groups of the other files, in table order.
var extraScenarios []func() []Scenario

// Group returns the scenarios of All in the named group.
func Group(name string) []Scenario {
	var out []Scenario
	for _, s := range All() {
		if s.Group == name {
			out = append(out, s)
		}
	}
	return out
}

// ToolName is the name of the trivial tool every scenario calls.
const ToolName = "echo"

// ToolOutput is what the trivial tool returns.
const ToolOutput = "ok"

// Tool returns the trivial tool: it ignores its arguments and returns
// [ToolOutput].
func Tool() pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: ToolName, Description: "Returns ok."},
		func(context.Context, json.RawMessage) (string, error) { return ToolOutput, nil })
}

// History returns n items of a plausible earlier conversation: rounds of a
// user message, a tool call, its output and an assistant message, at
// positions 1..n.
func History(n int) []state.Item {
	out := make([]state.Item, 0, n)
	for i := 0; len(out) < n; i++ {
		id := strconv.Itoa(i)
		round := []state.Item{
			state.UserMessage("question " + id),
			state.ToolCall("fc_h"+id, "call_h"+id, ToolName, `{"i":`+id+`}`),
			state.ToolOutput("call_h"+id, ToolName, ToolOutput),
			state.AssistantMessage("msg_h"+id, "answer "+id),
		}
		for _, it := range round {
			if len(out) == n {
				break
			}
			out = append(out, it.WithSeq(int64(len(out)+1)))
		}
	}
	return out
}

// TurnsPerRun is how many timed turns a turn scenario runs on one state
// before it starts a fresh one from the same history of h items: h/20, so
// that a large history grows by at most 10% during a run, and at least 64,
// so that the untimed reset between runs (two stop-the-world reads of the
// memory statistics, a cold cache after them) is paid rarely enough not to
// show in the per-turn figure. With h = 10 the model thus sees 11 to 139
// items, with h = 10 000 it sees 10 001 to 11 001.
func TurnsPerRun(h int) int { return max(64, h/20) }

// PassThrough returns a middleware named name that wraps every stage (run,
// turn, model and tool) and only calls the next handler: the cost of a
// layer of the chain itself.
func PassThrough(name string) pipeline.Middleware {
	return pipeline.Middleware{
		Name: name,
		Run: func(next pipeline.RunHandler) pipeline.RunHandler {
			return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
				return next.ServeRun(ctx, c)
			})
		},
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
				return next.ServeTurn(ctx, t)
			})
		},
		Model: func(next pipeline.ModelHandler) pipeline.ModelHandler {
			return pipeline.ModelHandlerFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				return next.CallModel(ctx, c)
			})
		},
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				return next.CallTool(ctx, c)
			})
		},
	}
}

// PassThroughs returns n pass-through middleware.
func PassThroughs(n int) []pipeline.Middleware {
	out := make([]pipeline.Middleware, n)
	for i := range out {
		out[i] = PassThrough("pass" + strconv.Itoa(i+1))
	}
	return out
}

var (
	callStep  = scripted.CallTool(ToolName, `{}`)
	replyStep = scripted.Reply("done")
)

// BareTurns times the bare loop, one turn per iteration: the scripted model
// answers with one call to the trivial tool, the loop calls the tool
// directly and appends the call and its output to the history. No Runner,
// no middleware: the floor every other figure is divided by.
func BareTurns(b *testing.B, history []state.Item) {
	ctx := context.Background()
	tool := Tool()
	specs := []pipeline.ToolSpec{tool.Spec()}
	perRun := TurnsPerRun(len(history))
	var (
		items []state.Item
		agent *pipeline.Agent
		k     = perRun
	)
	b.ReportAllocs()
	for b.Loop() {
		if k == perRun {
			b.StopTimer()
			items = make([]state.Item, len(history), len(history)+2*perRun)
			copy(items, history)
			agent = &pipeline.Agent{Name: "bench", Model: scripted.Generate(func(int) scripted.Step { return callStep })}
			k = 0
			b.StartTimer()
		}
		k++
		var err error
		if items, err = bareTurn(ctx, agent, tool, specs, items); err != nil {
			b.Fatal(err)
		}
	}
}

// bareTurn is one turn of the bare loop.
func bareTurn(ctx context.Context, agent *pipeline.Agent, tool pipeline.Tool, specs []pipeline.ToolSpec, items []state.Item) ([]state.Item, error) {
	resp, err := agent.Model.Respond(ctx, &pipeline.ModelCall{Agent: agent, Input: state.ItemsOf(items), Tools: specs})
	if err != nil {
		return items, err
	}
	seq := int64(len(items)) + 1
	for _, it := range resp.Items {
		items = append(items, it.WithSeq(seq))
		seq++
		if it.Kind() != state.KindToolCall {
			continue
		}
		out, err := tool.Call(ctx, &pipeline.ToolCall{Tool: tool, Item: it, Name: it.Name(), CallID: it.CallID(), Arguments: it.Text()})
		if err != nil {
			return items, err
		}
		items = append(items, state.ToolOutput(it.CallID(), it.Name(), out).WithSeq(seq))
		seq++
	}
	return items, nil
}

// RunnerTurns times the Runner, one turn per iteration, on runs that start
// from the given history; opts configure the Runner (its middleware). The
// scripted model calls b.Loop at the start of each model call, so an
// iteration is the full cycle from one model call to the next (see the
// package documentation).
func RunnerTurns(b *testing.B, history []state.Item, opts ...pipeline.Option) {
	RunnerTurnsWith(b, history, nil, opts...)
}

// RunnerTurnsWith is [RunnerTurns] with a hook that prepares each fresh
// run's state (a session ID, say) before it starts, untimed.
func RunnerTurnsWith(b *testing.B, history []state.Item, prepare func(run *state.Run), opts ...pipeline.Option) {
	ctx := context.Background()
	tool := Tool()
	perRun := TurnsPerRun(len(history))
	runner := pipeline.NewRunner(append(opts, pipeline.WithMaxTurns(perRun+2))...)
	input := pipeline.UserInput("go")
	done := false
	b.ReportAllocs()
	for runs := 0; !done; runs++ {
		b.StopTimer()
		run := state.NewRun("bench", "bench", 0) // one ID: a store may reuse the positions
		run.SetHistory(history)
		if prepare != nil {
			prepare(run)
		}
		model := scripted.Generate(func(n int) scripted.Step {
			if n > perRun {
				b.StopTimer() // the state is used up; the last turn and the run's end are not timed
				return replyStep
			}
			b.StartTimer() // a no-op but on a fresh run's first call
			if !b.Loop() {
				done = true
				return replyStep
			}
			return callStep
		})
		agent := &pipeline.Agent{Name: "bench", Model: model, Tools: []pipeline.Tool{tool}}
		res, err := runner.Run(ctx, agent, input, pipeline.WithState(run))
		if err != nil {
			b.Fatalf("run %d: %v", runs, err)
		}
		if res.FinalOutput != "done" {
			b.Fatalf("run %d ended without the final message: %+v", runs, res)
		}
	}
}

// TurnScenarios returns the per-turn scenarios: the bare loop, the Runner
// with no middleware and the Runner with five pass-through middleware on
// every stage, at each of [Histories].
func TurnScenarios() []Scenario {
	var out []Scenario
	for _, h := range Histories {
		hist := History(h)
		bare := fmt.Sprintf("turn/bare/history=%d", h)
		out = append(out,
			Scenario{Name: bare, Group: "turn", PerOp: 1, Unit: "turn",
				Bench: func(b *testing.B) { BareTurns(b, hist) }},
			Scenario{Name: fmt.Sprintf("turn/runner/history=%d", h), Group: "turn", Baseline: bare, PerOp: 1, Unit: "turn",
				Bench: func(b *testing.B) { RunnerTurns(b, hist) }},
			Scenario{Name: fmt.Sprintf("turn/runner+5mw/history=%d", h), Group: "turn", Baseline: bare, PerOp: 1, Unit: "turn",
				Bench: func(b *testing.B) { RunnerTurns(b, hist, pipeline.WithMiddleware(PassThroughs(5)...)) }},
		)
	}
	return out
}

// BareRun times whole runs of the bare loop: a user message, turns tool
// turns, then a final message; one run per iteration.
func BareRun(b *testing.B, turns int) {
	ctx := context.Background()
	tool := Tool()
	specs := []pipeline.ToolSpec{tool.Spec()}
	b.ReportAllocs()
	for b.Loop() {
		agent := &pipeline.Agent{Name: "bench", Model: scripted.Generate(func(n int) scripted.Step {
			if n > turns {
				return replyStep
			}
			return callStep
		})}
		items := []state.Item{state.UserMessage("go").WithSeq(1)}
		for {
			n := len(items)
			var err error
			if items, err = bareTurn(ctx, agent, tool, specs, items); err != nil {
				b.Fatal(err)
			}
			if items[len(items)-1].Kind() == state.KindAssistantMessage && len(items) == n+1 {
				break
			}
		}
	}
}

// RunnerRun times whole runs of the Runner: a user message, turns tool
// turns, then a final message; one run per iteration, the peers' scenario.
func RunnerRun(b *testing.B, turns int, opts ...pipeline.Option) {
	b.ReportAllocs()
	runnerRun(b, turns, nil, nil, opts...)
}

// runnerRun is RunnerRun with run options and a hook called after each run.
func runnerRun(b *testing.B, turns int, runOpts []pipeline.RunOption, after func(), opts ...pipeline.Option) {
	ctx := context.Background()
	tool := Tool()
	runner := pipeline.NewRunner(append(opts, pipeline.WithMaxTurns(turns+1))...)
	input := pipeline.UserInput("go")
	for b.Loop() {
		agent := &pipeline.Agent{Name: "bench", Tools: []pipeline.Tool{tool}, Model: scripted.Generate(func(n int) scripted.Step {
			if n > turns {
				return replyStep
			}
			return callStep
		})}
		res, err := runner.Run(ctx, agent, input, runOpts...)
		if err != nil {
			b.Fatal(err)
		}
		if res.FinalOutput != "done" {
			b.Fatalf("run ended without the final message: %+v", res)
		}
		if after != nil {
			after()
		}
	}
}

// RunScenarios returns the run scenarios at each of [RunLengths]: the bare
// loop and the Runner, each run being a user message, N tool turns and a
// final message. The table divides by N.
func RunScenarios() []Scenario {
	var out []Scenario
	for _, n := range RunLengths {
		bare := fmt.Sprintf("run/bare/turns=%d", n)
		out = append(out,
			Scenario{Name: bare, Group: "run", PerOp: n, Unit: "turn",
				Bench: func(b *testing.B) { BareRun(b, n) }},
			Scenario{Name: fmt.Sprintf("run/runner/turns=%d", n), Group: "run", Baseline: bare, PerOp: n, Unit: "turn",
				Bench: func(b *testing.B) { RunnerRun(b, n) }},
		)
	}
	return out
}
