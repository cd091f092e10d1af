package torture

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Tool names of the torture agents. Calls of [ToolTransfer] need approval;
// [ToolFinish] is terminal: its output is the run's final output.
// [ToolLookup] is read-only, and the checkpointer of [NewStack] takes it
// as retryable: a crash after a lookup ran and before its output was
// committed may make it run again under a new call ID.
const (
	ToolEffect   = "effect"
	ToolTransfer = "transfer"
	ToolFinish   = "finish"
	ToolLookup   = "lookup"
)

// The torture agents: a run starts with [AgentA], and each handoff call
// hands the run to the other one.
const (
	AgentA = "torture"
	AgentB = "torture-b"
)

// RejectMessage is the message the harness rejects calls with.
const RejectMessage = "Rejected by the torture harness."

// TripMarker in a final output (a final message, or the finish tool's
// output) makes the torture stack's output guardrail trip.
const TripMarker = "[tripwire]"

// A Plan is the work of a torture round or a load run: the runs to drive
// to their final output.
type Plan struct {
	Runs []RunSpec
}

// A RunSpec is one run and the script the torture model plays for it.
type RunSpec struct {
	ID      string
	Session string
	Input   string
	// Steps are the model's responses before the final one; each lists the
	// calls of that response.
	Steps [][]CallSpec
	// Final is the final message the last response gives (without Finish).
	Final string
	// Finish makes the last response a message and a call of [ToolFinish]
	// instead of a final message: the tool's output is the final output.
	Finish bool
	// Trip makes the run's final output carry [TripMarker], so the output
	// guardrail trips: the run ends with a tripwire, its final message (or
	// the finish tool's output) never reaches the session.
	Trip bool
	// Flaky lists the steps (1-based; len(Steps)+1 is the last response)
	// whose first model call in a process fails with a retryable error
	// beside a partial response: the stack's retry middleware makes the
	// call again, and nothing of the failed attempt may reach a checkpoint
	// or the session.
	Flaky []int
	// After is the run that must have ended before this one starts (the
	// earlier run of its session; see [WithPops]).
	After string
	// Pop is [PopOwn] or [PopHistory] for a run whose session a worker
	// pops while the run is paused; "" for the others.
	Pop string
}

// The pops of a run paused for approval (see [WithPops]).
const (
	// PopOwn pops the paused run's own items: its resume must give the
	// model exactly the input the live run had, and the run ends as
	// planned.
	PopOwn = "own"
	// PopHistory pops the run's own items and the last item of its
	// history: its resume must fail with state.ErrHistoryChanged before
	// the model is called, and the run stays paused.
	PopHistory = "history"
)

// WithPops returns plan with two more runs, in a session of their own
// (prefix-pop): the first is one effect call and a final message; the
// second starts after it has ended, pauses at a transfer (approved), and
// ends with a final message. While the second is paused, a worker pops
// the session: kind [PopOwn] down to the first run's items, [PopHistory]
// one item further (the first run's final message).
func WithPops(plan Plan, prefix, kind string) Plan {
	sid := prefix + "-pop"
	first := RunSpec{
		ID: prefix + "-p000", Session: sid, Input: "Please do the work of run " + prefix + "-p000.",
		Steps: [][]CallSpec{{{Tool: ToolEffect}}}, Final: "Done with run " + prefix + "-p000.",
	}
	second := RunSpec{
		ID: prefix + "-p001", Session: sid, Input: "Please do the work of run " + prefix + "-p001.",
		Steps: [][]CallSpec{{{Tool: ToolTransfer}}}, Final: "Done with run " + prefix + "-p001.",
		After: first.ID, Pop: kind,
	}
	plan.Runs = append(slices.Clip(plan.Runs), first, second)
	return plan
}

// popTarget returns how many items the session of a [WithPops] pair
// holds once the worker popped it while spec, the second run, was paused:
// the first run's items (less its last for [PopHistory]).
func popTarget(first, spec RunSpec) int {
	if spec.Pop == PopHistory {
		return first.Items() - 1
	}
	return first.Items()
}

// A CallSpec is one call the model makes: a call of Tool, or with
// Handoff a handoff to the other agent.
type CallSpec struct {
	Tool string
	// Reject makes the harness reject the call (transfer calls only).
	Reject bool
	// Handoff makes the call a handoff to the other agent (Tool unused).
	Handoff bool
	// Slow makes a lookup wait until its context is done: it runs past
	// its time limit ([LookupTimeout]), and its output is the timeout,
	// which the model sees.
	Slow bool
}

// Calls returns the number of calls in the run's script whose output the
// session holds when the run ends: tool calls, handoffs, the finish call.
func (s RunSpec) Calls() int {
	n := 0
	for _, st := range s.Steps {
		n += len(st)
	}
	if s.Finish {
		n++
	}
	return n
}

// Items returns the number of items the run stores in its session when it
// ends: its input, each response's items and outputs, and the last
// response's items (a final message; or a message, the finish call and its
// output) less what a tripwire discards (the messages; a finish call stays,
// with its output withheld).
func (s RunSpec) Items() int {
	n := 1
	for _, st := range s.Steps {
		n += 1 + len(st)*2 // reasoning or a message, then each call and its output
	}
	if s.Finish {
		n += 2
	}
	if !s.Trip {
		n++
	}
	return n
}

// AgentAt returns the agent that serves the run's model call for step
// (1-based; len(Steps)+1 is the last response): [AgentA], or [AgentB]
// after an odd number of handoffs in the earlier steps.
func (s RunSpec) AgentAt(step int) string {
	n := 0
	for _, st := range s.Steps[:min(max(step-1, 0), len(s.Steps))] {
		for _, c := range st {
			if c.Handoff {
				n++
			}
		}
	}
	if n%2 == 1 {
		return AgentB
	}
	return AgentA
}

// IsFlaky reports whether the first model call of step fails (see
// [RunSpec.Flaky]).
func (s RunSpec) IsFlaky(step int) bool { return slices.Contains(s.Flaky, step) }

// FinalAgent returns the agent that serves the run's last response.
func (s RunSpec) FinalAgent() string { return s.AgentAt(len(s.Steps) + 1) }

// NewPlan returns a deterministic plan of n runs named prefix-rNNN over
// sessions sessions named prefix-sNNN: each run takes one to three tool
// steps. About a third of the steps are one or two lookups (calls of
// [ToolLookup]); the others are one or two calls, about a third of them
// transfers (which need approval), a quarter of those rejected, the rest
// effects, and about a quarter of them have a lookup among their calls. About a third of the steps also
// hand off to the other agent (at a random place among the calls), a
// third of the runs end with the terminal finish tool instead of a final
// message, and a quarter have their final output tripped by the output
// guardrail. About a quarter of the model calls fail once with a
// retryable error, which the retry middleware recovers from, and about a
// quarter of the lookups time out.
func NewPlan(seed uint64, prefix string, n, sessions int) Plan {
	rng := rand.New(rand.NewPCG(seed, 0x746f7274757265))
	// The faults of issue 30 draw from a stream of their own, so a seed
	// gives the same runs as before they were added.
	faultRng := rand.New(rand.NewPCG(seed, 0x6661756c7473))
	if sessions < 1 {
		sessions = 1
	}
	p := Plan{Runs: make([]RunSpec, n)}
	for i := range p.Runs {
		id := fmt.Sprintf("%s-r%03d", prefix, i)
		spec := RunSpec{
			ID:      id,
			Session: fmt.Sprintf("%s-s%03d", prefix, i%sessions),
			Input:   "Please do the work of run " + id + ".",
			Final:   "Done with run " + id + ".",
		}
		for range 1 + rng.IntN(3) {
			calls := make([]CallSpec, 1+rng.IntN(2))
			lookups := rng.IntN(3) == 0 // every call retryable
			for k := range calls {
				switch {
				case lookups:
					calls[k] = CallSpec{Tool: ToolLookup}
				case rng.IntN(3) == 0:
					calls[k] = CallSpec{Tool: ToolTransfer, Reject: rng.IntN(4) == 0}
				default:
					calls[k] = CallSpec{Tool: ToolEffect}
				}
			}
			if !lookups && rng.IntN(4) == 0 { // retryable and not, mixed
				calls = slices.Insert(calls, rng.IntN(len(calls)+1), CallSpec{Tool: ToolLookup})
			}
			if rng.IntN(3) == 0 {
				calls = slices.Insert(calls, rng.IntN(len(calls)+1), CallSpec{Handoff: true})
			}
			spec.Steps = append(spec.Steps, calls)
		}
		spec.Finish = rng.IntN(3) == 0
		spec.Trip = rng.IntN(4) == 0
		if spec.Trip {
			spec.Final = "Done with run " + id + " " + TripMarker
		}
		faults(faultRng, &spec)
		p.Runs[i] = spec
	}
	return p
}

// faults adds the model and tool faults to spec: about a quarter of its
// model calls fail once (a retried model call), and about a quarter of
// its lookups run past their time limit.
func faults(rng *rand.Rand, spec *RunSpec) {
	for step := 1; step <= len(spec.Steps)+1; step++ {
		if rng.IntN(4) == 0 {
			spec.Flaky = append(spec.Flaky, step)
		}
	}
	for _, st := range spec.Steps {
		for k := range st {
			if st[k].Tool == ToolLookup && rng.IntN(4) == 0 {
				st[k].Slow = true
			}
		}
	}
}

// Run returns the spec of the run with the given ID.
func (p Plan) Run(id string) (RunSpec, bool) {
	for _, r := range p.Runs {
		if r.ID == id {
			return r, true
		}
	}
	return RunSpec{}, false
}
