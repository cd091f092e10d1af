package scripted

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// ErrNoRule means no rule of a [Rules] model matched a call. It is wrapped
// by [*NoRuleError].
var ErrNoRule = errors.New("scripted: no rule matches the call")

// A NoRuleError reports a call that no rule matched.
type NoRuleError struct {
	Agent string // the agent the call was made for
	Turn  int    // the run's turn (0 outside a run)
}

// Error names the agent and the turn no rule matched.
func (e *NoRuleError) Error() string {
	return "scripted: no rule matches the call of agent " + strconv.Quote(e.Agent) + " on turn " + strconv.Itoa(e.Turn)
}

// Unwrap returns [ErrNoRule].
func (e *NoRuleError) Unwrap() error { return ErrNoRule }

// A Match reports whether a rule applies to a model call. It must be safe
// for concurrent use and must not keep c.
type Match func(c *pipeline.ModelCall) bool

// Any matches every call.
func Any() Match { return func(*pipeline.ModelCall) bool { return true } }

// ForAgent matches the calls made for the named agent.
func ForAgent(name string) Match {
	return func(c *pipeline.ModelCall) bool { return c.Agent != nil && c.Agent.Name == name }
}

// LastUserContains matches the calls whose input's last user message
// contains s.
func LastUserContains(s string) Match {
	return func(c *pipeline.ModelCall) bool {
		it, ok := last(c.Input, func(k state.Kind) bool { return k == state.KindUserMessage })
		return ok && strings.Contains(it.Text(), s)
	}
}

// AfterOutput matches the calls whose input ends with a tool's (or
// handoff's) output containing s ("" matches any output): the model's turn
// after a tool ran.
func AfterOutput(s string) Match {
	return func(c *pipeline.ModelCall) bool {
		n := c.Input.Len()
		if n == 0 {
			return false
		}
		it := c.Input.At(n - 1)
		return it.Kind().IsOutput() && strings.Contains(it.Text(), s)
	}
}

// All matches the calls every one of ms matches.
func All(ms ...Match) Match {
	return func(c *pipeline.ModelCall) bool {
		for _, m := range ms {
			if m != nil && !m(c) {
				return false
			}
		}
		return true
	}
}

// last returns the last item of v whose kind is accepted.
func last(v state.Items, accept func(state.Kind) bool) (state.Item, bool) {
	for i := v.Len() - 1; i >= 0; i-- {
		if it := v.At(i); accept(it.Kind()) {
			return it, true
		}
	}
	return state.Item{}, false
}

// A Rule answers the model calls it matches with its steps: the first
// call of a run it answers with the first step, the next with the second,
// and so on; past its last step it answers with the last one again, so a
// rule of one step answers every call it matches alike.
type Rule struct {
	match Match
	steps []Step
}

// On returns a rule that answers the calls match matches (every call if
// match is nil) with steps. It panics without steps.
func On(match Match, steps ...Step) Rule {
	if len(steps) == 0 {
		panic("scripted: On called without steps")
	}
	if match == nil {
		match = Any()
	}
	return Rule{match: match, steps: slices.Clone(steps)}
}

// rulesExtension is the run extension under which a [Rules] model records,
// per rule, the turns it answered.
const rulesExtension = "turnkit.scripted.rules"

// Rules returns a model that answers each call with the first of rules
// that matches it, or fails it with a [*NoRuleError].
//
// Its position in a rule is the run's, not the model's: the turns of the
// run each rule answered are recorded in the run's state (the extension
// "turnkit.scripted.rules"), so one model serves any number of concurrent
// runs, each from the start of its rules, and a run resumed from a
// checkpoint, in this process or another, goes on where it was. A call
// made again on the same turn (a retry) gets the same step. Outside a run
// (a call without a turn) the model counts the calls each rule answered.
//
//	m := scripted.Rules(
//		scripted.On(scripted.AfterOutput(""), scripted.Reply("Refunded.")),
//		scripted.On(scripted.LastUserContains("refund"), scripted.CallTool("refund", `{"order":"A1"}`)),
//		scripted.On(scripted.ForAgent("faq"), scripted.Reply("See the FAQ.")),
//	)
func Rules(rules ...Rule) *Model {
	rules = slices.Clone(rules)
	for i, r := range rules {
		if r.match == nil || len(r.steps) == 0 {
			panic("scripted: Rules: rule " + strconv.Itoa(i) + " was not made with On")
		}
	}
	var (
		mu      sync.Mutex
		counted = make([]int, len(rules)) // calls outside a run
	)
	m := &Model{name: "scripted", steps: -1}
	m.pick = func(c *pipeline.ModelCall) (Step, error) {
		for i, r := range rules {
			if !r.match(c) {
				continue
			}
			var k int
			if c.Turn == nil || c.Turn.Run == nil {
				mu.Lock()
				k = counted[i]
				counted[i]++
				mu.Unlock()
			} else {
				k = answeredBefore(c.Turn.Run, i, c.Turn.Number)
			}
			return r.steps[min(k, len(r.steps)-1)], nil
		}
		e := &NoRuleError{}
		if c.Agent != nil {
			e.Agent = c.Agent.Name
		}
		if c.Turn != nil {
			e.Turn = c.Turn.Number
		}
		return Step{}, e
	}
	return m
}

// answeredBefore returns how many earlier turns of run rule i answered,
// and records that it answers turn.
func answeredBefore(run *state.Run, i, turn int) int {
	turns := map[string][]int{}
	if raw, ok := run.Extension(rulesExtension); ok {
		_ = json.Unmarshal(raw, &turns) // a record this package did not write counts as none
	}
	key := strconv.Itoa(i)
	k := 0
	for _, t := range turns[key] {
		if t < turn {
			k++
		}
	}
	if !slices.Contains(turns[key], turn) {
		turns[key] = append(turns[key], turn)
		if raw, err := json.Marshal(turns); err == nil {
			run.SetExtension(rulesExtension, raw)
		}
	}
	return k
}
