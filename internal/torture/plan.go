package torture

import (
	"fmt"
	"math/rand/v2"
)

// Tool names of the torture agent. Calls of [ToolTransfer] need approval.
const (
	ToolEffect   = "effect"
	ToolTransfer = "transfer"
)

// RejectMessage is the message the harness rejects calls with.
const RejectMessage = "Rejected by the torture harness."

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
	// Final is the final output the last response gives.
	Final string
}

// A CallSpec is one tool call the model makes.
type CallSpec struct {
	Tool string
	// Reject makes the harness reject the call (transfer calls only).
	Reject bool
}

// Calls returns the number of tool calls in the run's script.
func (s RunSpec) Calls() int {
	n := 0
	for _, st := range s.Steps {
		n += len(st)
	}
	return n
}

// Items returns the number of items the run stores in its session when it
// finishes: its input, each response's items and outputs, the final
// message.
func (s RunSpec) Items() int {
	n := 2
	for _, st := range s.Steps {
		n += 1 + len(st)*2 // reasoning or a message, then each call and its output
	}
	return n
}

// NewPlan returns a deterministic plan of n runs named prefix-rNNN over
// sessions sessions named prefix-sNNN: each run takes one to three tool
// steps of one or two calls, about a third of them transfers (which need
// approval), a quarter of those rejected.
func NewPlan(seed uint64, prefix string, n, sessions int) Plan {
	rng := rand.New(rand.NewPCG(seed, 0x746f7274757265))
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
			for k := range calls {
				calls[k] = CallSpec{Tool: ToolEffect}
				if rng.IntN(3) == 0 {
					calls[k] = CallSpec{Tool: ToolTransfer, Reject: rng.IntN(4) == 0}
				}
			}
			spec.Steps = append(spec.Steps, calls)
		}
		p.Runs[i] = spec
	}
	return p
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
