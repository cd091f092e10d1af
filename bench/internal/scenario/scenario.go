package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A Scenario is one benchmark of the harness. Bench sets up what it needs
// on every call, so a scenario can be run any number of times, but not two
// at once: the crash-safe scenarios of a backend share its session IDs.
type Scenario struct {
	// Name identifies the scenario, such as "turn/runner/history=10"; it is
	// the sub-benchmark name under its group's Benchmark func.
	Name string
	// Group is the table section: "turn", "run", "middleware",
	// "policies", "checkpoint", "approval", "session", "crashsafe",
	// "sealed", "mcp" or "adapter".
	Group string
	// Baseline names the scenario that ratios are taken against, or "" for
	// a scenario that is its own baseline.
	Baseline string
	// Raw names a second baseline, or "": the raw driver doing the same
	// durable writes (the crash-safe group's raw-driver rows), which the
	// table gives a ratio column of its own.
	Raw string
	// Same names a third baseline, or "": the raw driver writing exactly
	// what the store writes, into the store's own schema, with every value
	// computed rather than read or checked (the crash-safe group's
	// raw-same-writes rows): the floor of the store's writes, which the
	// table also gives a column of its own.
	Same string
	// PerOp is how many turns (or items, or commits) one b.Loop iteration
	// does; the table divides by it. 1 for turn scenarios.
	PerOp int
	// Unit names what PerOp counts: "turn", "item", "commit", "call" or
	// "op".
	Unit string
	// Paired makes the ratio to Baseline the median, over the rounds, of
	// this scenario's time in a round ÷ the baseline's in the same round
	// (the two run one after the other), rather than the fastest round's
	// ÷ the baseline's fastest: on a machine whose speed drifts between
	// rounds, each pair meets the same machine.
	Paired bool
	// Own names the scenario that is this one's part done by another
	// library (an adapter's raw SDK call), measured in the same rounds:
	// the ratio is then this scenario's time less Own's, over Baseline's,
	// per round and paired as Paired says. The adapter rows give an
	// adapter's own cost as a share of the SDK's typed call this way.
	Own string
	// Skip, when not empty, says why the scenario cannot run here (a
	// backend with no server, node or the MCP reference server missing);
	// Bench is nil then.
	Skip string
	// Bench runs the scenario. It reports allocations itself.
	Bench func(b *testing.B)
}

// Histories returns the history sizes of the turn scenarios, in item
// counts: 10, 1 000 and 10 000. Each call returns a new slice.
func Histories() []int { return []int{10, 1_000, 10_000} }

// RunLengths returns the run lengths, in tool turns, of the run scenarios
// that the peers repeat: 10, 100 and 1 000. Each call returns a new slice.
func RunLengths() []int { return []int{10, 100, 1_000} }

// All returns every scenario, by group in this order: turn, run,
// checkpoint, approval, crashsafe, sealed, mcp, middleware, policies, then the
// run scenarios with the default chain (turnbench's table keeps this order
// within a group). Scenarios whose servers or programs are missing are
// present with Skip set. Each call builds new scenarios.
func All() []Scenario {
	var out []Scenario
	for _, group := range []func() []Scenario{
		turnScenarios,
		runScenarios,
		checkpointScenarios,
		approvalScenarios,
		crashSafeScenarios,
		sealedScenarios,
		mcpScenarios,
		middlewareScenarios,
		policyScenarios,
		chainRunScenarios,
	} {
		out = append(out, group()...)
	}
	return out
}

// Group returns the scenarios of [All] in the named group, such as "turn".
func Group(name string) []Scenario {
	var out []Scenario
	for _, s := range All() {
		if s.Group == name {
			out = append(out, s)
		}
	}
	return out
}

// toolName is the name of the trivial tool every scenario calls.
const toolName = "echo"

// toolOutput is what the trivial tool returns.
const toolOutput = "ok"

// trivialTool returns the trivial tool: it ignores its arguments and
// returns toolOutput.
func trivialTool() pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: toolName, Description: "Returns ok."},
		func(context.Context, json.RawMessage) (string, error) { return toolOutput, nil })
}

// makeHistory returns n items of a plausible earlier conversation: rounds
// of a user message, a tool call, its output and an assistant message, at
// positions 1..n.
func makeHistory(n int) []state.Item {
	out := make([]state.Item, 0, n)
	for i := 0; len(out) < n; i++ {
		id := strconv.Itoa(i)
		round := []state.Item{
			state.UserMessage("question " + id),
			state.ToolCall("fc_h"+id, "call_h"+id, toolName, `{"i":`+id+`}`),
			state.ToolOutput("call_h"+id, toolName, toolOutput),
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

// turnsPerRun is how many timed turns a turn scenario runs on one state
// before it starts a fresh one from the same history of h items: h/20, so
// that a large history grows by at most 10% during a run, and at least 64,
// so that the untimed reset between runs (two stop-the-world reads of the
// memory statistics, a cold cache after them) is paid rarely enough not to
// show in the per-turn figure. With h = 10 the model thus sees 11 to 139
// items, with h = 10 000 it sees 10 001 to 11 001.
func turnsPerRun(h int) int { return max(64, h/20) }

// crashSafeRunTurns is how many timed turns a crash-safe scenario (and the
// raw driver's beside it) runs before it starts a fresh run, at every
// history size: turnsPerRun(10 000). A run's length, not its history,
// decides whether SQLite's automatic checkpoints of the write-ahead log
// (every 1 000 pages, some 140 crash-safe turns) land in the timed turns:
// each run starts on a log emptied untimed (sqliteSettle), so runs of 64
// turns never reached one and runs of 500 reached three. With turnsPerRun
// the SQLite rows at h = 10 and 1 000 left out the checkpoints' copying,
// which every turn pays for in production, and those at h = 10 000 did
// not: persistence alone measured 72 µs a turn at h = 10 and 112 µs at
// h = 10 000, and 110 to 122 µs at h = 10 in runs of 500 turns.
const crashSafeRunTurns = 500

// passThrough returns a middleware named name that wraps every stage (run,
// turn, model and tool) and only calls the next handler: the cost of a
// layer of the chain itself.
func passThrough(name string) pipeline.Middleware {
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
		Model: func(next pipeline.Model) pipeline.Model {
			return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				return next.Respond(ctx, c)
			})
		},
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				return next.CallTool(ctx, c)
			})
		},
	}
}

// passThroughs returns n pass-through middleware.
func passThroughs(n int) []pipeline.Middleware {
	out := make([]pipeline.Middleware, n)
	for i := range out {
		out[i] = passThrough("pass" + strconv.Itoa(i+1))
	}
	return out
}

var (
	callStep  = scripted.CallTool(toolName, `{}`)
	replyStep = scripted.Reply("done")
)

// bareTurns times the bare loop, one turn per iteration: the scripted model
// answers with one call to the trivial tool, the loop calls the tool
// directly and appends the call and its output to the history. No Runner,
// no middleware: the floor every other figure is divided by.
func bareTurns(b *testing.B, history []state.Item) {
	ctx := context.Background()
	tool := trivialTool()
	specs := []pipeline.ToolSpec{tool.Spec()}
	perRun := turnsPerRun(len(history))
	var (
		items []state.Item
		agent *pipeline.Agent
		turn  = &pipeline.Turn{Run: state.NewRun("bench", "bench")} // the Runner's runs' ID (runnerTurnsTool)
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
		turn.Number = k
		var err error
		if items, err = bareTurn(ctx, agent, turn, tool, specs, items); err != nil {
			b.Fatal(err)
		}
	}
}

// bareTurn is one turn of the bare loop. The model call names turn, whose
// run has an ID as long as the Runner's runs of the same scenario have:
// the scripted model writes the run's ID and the turn number into every
// item ID and call ID, so without it the bare loop's model wrote shorter
// IDs than the Runner's (a 36-character run ID, twice per call item, was
// half of what a Runner run of 10 turns executed beyond the bare loop).
func bareTurn(ctx context.Context, agent *pipeline.Agent, turn *pipeline.Turn, tool pipeline.Tool, specs []pipeline.ToolSpec, items []state.Item) ([]state.Item, error) {
	resp, err := agent.Model.Respond(ctx, &pipeline.ModelCall{Turn: turn, Agent: agent, Input: state.ItemsOf(items), Tools: specs})
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

// runnerTurns times the Runner, one turn per iteration, on runs that start
// from the given history; opts configure the Runner (its middleware). The
// scripted model calls b.Loop at the start of each model call, so an
// iteration is the full cycle from one model call to the next (see the
// package documentation).
func runnerTurns(b *testing.B, history []state.Item, opts ...pipeline.Option) {
	runnerTurnsWith(b, history, nil, opts...)
}

// runnerTurnsWith is runnerTurns with a hook that prepares each fresh
// run's state before it starts, untimed, in place of giving it the
// history: a scenario with a session store names the session, whose
// items persistence reads as the run's history.
func runnerTurnsWith(b *testing.B, history []state.Item, prepare func(run *state.Run), opts ...pipeline.Option) {
	runnerTurnsTool(b, history, prepare, trivialTool(), opts...)
}

// runnerTurnsTool is runnerTurnsWith with the tool the model calls, which
// must answer as the trivial tool does.
func runnerTurnsTool(b *testing.B, history []state.Item, prepare func(run *state.Run), tool pipeline.Tool, opts ...pipeline.Option) {
	runnerTurnsClocked(b, history, prepare, tool, nil, opts...)
}

// runnerTurnsClocked is runnerTurnsTool with clock, when not nil, started
// and stopped with the benchmark's timer and counting the timed turns.
func runnerTurnsClocked(b *testing.B, history []state.Item, prepare func(run *state.Run), tool pipeline.Tool, clock *cpuClock, opts ...pipeline.Option) {
	runnerTurnsIn(context.Background(), b, history, turnsPerRun(len(history)), prepare, tool, clock, opts...)
}

// runnerTurnsIn is runnerTurnsClocked with the runs served under ctx,
// perRun timed turns each.
func runnerTurnsIn(ctx context.Context, b *testing.B, history []state.Item, perRun int, prepare func(run *state.Run), tool pipeline.Tool, clock *cpuClock, opts ...pipeline.Option) {
	runner := pipeline.NewRunner(append(opts, pipeline.WithMaxTurns(perRun+2))...)
	input := pipeline.UserInput("go")
	done := false
	b.ReportAllocs()
	for runs := 0; !done; runs++ {
		b.StopTimer()
		run := state.NewRun("bench", "bench") // one ID: a store may reuse the positions
		if prepare != nil {
			// No copy of the history for persistence to replace: at
			// h=10 000 that was 880 KB a run, untimed, but collected
			// while the next run's turns were timed.
			prepare(run)
		} else if err := runcore.SetHistory(run, history); err != nil {
			b.Fatal(err)
		}
		model := scripted.Generate(func(n int) scripted.Step {
			if n > perRun {
				b.StopTimer() // the state is used up; the last turn and the run's end are not timed
				clock.end()
				return replyStep
			}
			b.StartTimer() // a no-op but on a fresh run's first call
			clock.begin()
			if !b.Loop() { // which stopped the timer
				clock.end()
				done = true
				return replyStep
			}
			if clock != nil {
				clock.turns++
			}
			return callStep
		})
		agent := &pipeline.Agent{Name: "bench", Model: model, Tools: []pipeline.Tool{tool}}
		res, err := runner.Run(ctx, agent, input, pipeline.WithState(run))
		if err != nil {
			b.Fatalf("run %d: %v", runs, err)
		}
		if res.FinalOutput() != "done" {
			b.Fatalf("run %d ended without the final message: %+v", runs, res)
		}
	}
}

// turnScenarios returns the per-turn scenarios: the bare loop, the Runner
// with no middleware and the Runner with five pass-through middleware on
// every stage, at each of [Histories].
func turnScenarios() []Scenario {
	var out []Scenario
	for _, h := range Histories() {
		hist := makeHistory(h)
		bare := fmt.Sprintf("turn/bare/history=%d", h)
		out = append(out,
			Scenario{Name: bare, Group: "turn", PerOp: 1, Unit: "turn",
				Bench: func(b *testing.B) { bareTurns(b, hist) }},
			Scenario{Name: fmt.Sprintf("turn/runner/history=%d", h), Group: "turn", Baseline: bare, PerOp: 1, Unit: "turn",
				Bench: func(b *testing.B) { runnerTurns(b, hist) }},
			Scenario{Name: fmt.Sprintf("turn/runner+5mw/history=%d", h), Group: "turn", Baseline: bare, PerOp: 1, Unit: "turn",
				Bench: func(b *testing.B) { runnerTurns(b, hist, pipeline.WithMiddleware(passThroughs(5)...)) }},
		)
	}
	return out
}

// bareRun times whole runs of the bare loop: a user message, turns tool
// turns, then a final message; one run per iteration.
func bareRun(b *testing.B, turns int) {
	ctx := context.Background()
	tool := trivialTool()
	specs := []pipeline.ToolSpec{tool.Spec()}
	turn := &pipeline.Turn{Run: state.NewRun(bareRunID, "bench")} // as long as the Runner's random run IDs
	b.ReportAllocs()
	for b.Loop() {
		agent := &pipeline.Agent{Name: "bench", Model: scripted.Generate(func(n int) scripted.Step {
			if n > turns {
				return replyStep
			}
			return callStep
		})}
		items := []state.Item{state.UserMessage("go").WithSeq(1)}
		turn.Number = 0
		for {
			turn.Number++
			n := len(items)
			var err error
			if items, err = bareTurn(ctx, agent, turn, tool, specs, items); err != nil {
				b.Fatal(err)
			}
			if items[len(items)-1].Kind() == state.KindAssistantMessage && len(items) == n+1 {
				break
			}
		}
	}
}

// bareRunID is the bare loop's run ID in the run scenarios: the length of
// the random IDs the Runner gives runs ("run_" and 32 hex digits).
const bareRunID = "run_0123456789abcdef0123456789abcdef"

// runnerRun times whole runs of the Runner: a user message, turns tool
// turns, then a final message; one run per iteration, the peers' scenario.
// runOpts are passed to each run, opts configure the Runner, and after,
// if not nil, is called after each run.
func runnerRun(b *testing.B, turns int, runOpts []pipeline.RunOption, after func(), opts ...pipeline.Option) {
	ctx := context.Background()
	tool := trivialTool()
	runner := pipeline.NewRunner(append(opts, pipeline.WithMaxTurns(turns+1))...)
	input := pipeline.UserInput("go")
	b.ReportAllocs()
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
		if res.FinalOutput() != "done" {
			b.Fatalf("run ended without the final message: %+v", res)
		}
		if after != nil {
			after()
		}
	}
}

// runScenarios returns the run scenarios at each of [RunLengths]: the bare
// loop and the Runner, each run being a user message, N tool turns and a
// final message. The table divides by N.
func runScenarios() []Scenario {
	var out []Scenario
	for _, n := range RunLengths() {
		bare := fmt.Sprintf("run/bare/turns=%d", n)
		out = append(out,
			Scenario{Name: bare, Group: "run", PerOp: n, Unit: "turn",
				Bench: func(b *testing.B) { bareRun(b, n) }},
			Scenario{Name: fmt.Sprintf("run/runner/turns=%d", n), Group: "run", Baseline: bare, PerOp: n, Unit: "turn",
				Bench: func(b *testing.B) { runnerRun(b, n, nil, nil) }},
		)
	}
	return out
}
