package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/state"
)

// Errors of budgets; match them with errors.Is.
var (
	// ErrBudgetExceeded means a run reached a limit of its budget. It is
	// wrapped by [*BudgetError].
	ErrBudgetExceeded = errors.New("pipeline: run budget exceeded")
	// ErrNoPrice means a budget with a cost limit has no price for a model
	// that answered. It is wrapped by [*NoPriceError].
	ErrNoPrice = errors.New("pipeline: no price for the model")
)

// budgetKey is the extension key under which a run with a cost limit
// records what its model calls cost so far, so that a resumed run, in any
// process, counts on from there.
const budgetKey = "turnkit.budget"

// A Budget limits what a run may spend on its model calls: input tokens,
// output tokens, cost, or any of them (a zero limit is no limit). It is
// checked after each model call, against the run's totals (its state's
// usage, which a checkpoint keeps), and before each model call: a run
// that reached a limit ends with a [*BudgetError] before it makes another
// model call. When the call that reached it asked for tools, they do not
// run: the state keeps the calls open, and resuming it (with a budget
// that leaves room, on a runner made with a larger one) runs them. A
// response without calls ends the run as it would have, since nothing
// more is spent.
type Budget struct {
	// InputTokens limits the run's input tokens (cached ones included).
	InputTokens int64
	// OutputTokens limits the run's output tokens (reasoning included).
	OutputTokens int64
	// Cost limits the run's cost, in the currency of Prices, which must
	// then price every model that answers.
	Cost float64
	// Prices are the models' prices, by model name: the name a response
	// reports (ModelResponse.Model), else the one the agent asked for
	// (ModelSettings.Model), else the longest name the response's is an
	// extension of (a dated snapshot of a priced model).
	Prices map[string]Price
}

// A Price is what a model charges per million tokens.
type Price struct {
	Input float64
	// CachedInput is the price of cached input tokens; 0 means Input's.
	CachedInput float64
	Output      float64
}

// cost returns what usage u costs at p.
func (p Price) cost(u state.Usage) float64 {
	cached := p.CachedInput
	if cached == 0 {
		cached = p.Input
	}
	uncached := max(u.InputTokens-u.CachedTokens, 0)
	return (float64(uncached)*p.Input + float64(u.CachedTokens)*cached + float64(u.OutputTokens)*p.Output) / 1e6
}

// WithBudget sets the budget of every run of the runner (see [Budget]).
// The zero Budget sets no limit.
func WithBudget(b Budget) Option {
	return optionFunc(func(c *config) {
		if b.InputTokens > 0 || b.OutputTokens > 0 || b.Cost > 0 {
			c.budget = &b
		} else {
			c.budget = nil
		}
	})
}

// A BudgetError reports a run that reached a limit of its [Budget]. It is
// the cause inside the run's [*RunError], so [StateOf] finds the run's
// resumable state beside it.
type BudgetError struct {
	// Limit names the limit reached: "input_tokens", "output_tokens" or
	// "cost".
	Limit string
	// Max is the limit and Used what the run used of it.
	Max, Used float64
	// Usage is the run's usage and Cost its cost so far (0 without a cost
	// limit).
	Usage state.Usage
	Cost  float64
}

// Error says what failed, where, and why.
func (e *BudgetError) Error() string {
	return "pipeline: run budget exceeded: " + e.Limit + " " + formatAmount(e.Used) + " of " + formatAmount(e.Max)
}

// Unwrap returns [ErrBudgetExceeded].
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// A NoPriceError reports a model that answered a run with a cost limit
// and has no price in its budget.
type NoPriceError struct {
	// Model is the model name the response reported, and Requested the
	// one the agent asked for.
	Model, Requested string
}

// Error says what failed, where, and why.
func (e *NoPriceError) Error() string {
	return fmt.Sprintf("pipeline: budget: no price for model %q (asked for %q)", e.Model, e.Requested)
}

// Unwrap returns [ErrNoPrice].
func (e *NoPriceError) Unwrap() error { return ErrNoPrice }

func formatAmount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// budgetState is what a run with a cost limit records of its cost.
type budgetState struct {
	Cost float64 `json:"cost"`
}

// spent returns the run's recorded cost.
func spent(run *state.Run) float64 {
	raw, ok := run.Extension(budgetKey)
	if !ok {
		return 0
	}
	var s budgetState
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	return s.Cost
}

// A spend is what a run has spent, kept by the run's loop for its turns so
// that a check reads no extension: the run's cost as recorded when the
// run (or its resumption) began, plus what its model calls cost since.
type spend struct {
	cost float64
}

// newSpend returns the spend of a run the runner serves, nil without a
// cost limit.
func (b *Budget) newSpend(run *state.Run) *spend {
	if b == nil || b.Cost <= 0 {
		return nil
	}
	return &spend{cost: spent(run)}
}

// total returns the run's cost so far.
func (s *spend) total(run *state.Run) float64 {
	if s == nil {
		return spent(run) // a turn the runner did not make
	}
	return s.cost
}

// charge adds the cost of response resp, asked for with settings model
// name requested, to the run's, when the budget limits cost, and records
// the new total in the run.
func (b *Budget) charge(run *state.Run, s *spend, requested string, resp *ModelResponse) error {
	if b.Cost <= 0 {
		return nil
	}
	p, ok := b.price(resp.Model, requested)
	if !ok {
		return &NoPriceError{Model: resp.Model, Requested: requested}
	}
	total := s.total(run) + p.cost(resp.Usage)
	if s != nil {
		s.cost = total
	}
	var buf [48]byte
	raw := strconv.AppendFloat(append(buf[:0], `{"cost":`...), total, 'g', -1, 64)
	run.SetExtension(budgetKey, append(raw, '}'))
	return nil
}

// price returns the price of the model that answered.
func (b *Budget) price(model, requested string) (Price, bool) {
	if p, ok := b.Prices[model]; ok && model != "" {
		return p, true
	}
	if p, ok := b.Prices[requested]; ok && requested != "" {
		return p, true
	}
	best, found := "", false
	for name := range b.Prices {
		if name != "" && strings.HasPrefix(model, name) && len(name) > len(best) {
			best, found = name, true
		}
	}
	return b.Prices[best], found
}

// reached returns the error of the first limit the run reached, or nil.
func (b *Budget) reached(run *state.Run, s *spend) error {
	u := run.Usage()
	var e *BudgetError
	switch {
	case b.InputTokens > 0 && u.InputTokens >= b.InputTokens:
		e = &BudgetError{Limit: "input_tokens", Max: float64(b.InputTokens), Used: float64(u.InputTokens)}
	case b.OutputTokens > 0 && u.OutputTokens >= b.OutputTokens:
		e = &BudgetError{Limit: "output_tokens", Max: float64(b.OutputTokens), Used: float64(u.OutputTokens)}
	case b.Cost > 0:
		if c := s.total(run); c >= b.Cost {
			e = &BudgetError{Limit: "cost", Max: b.Cost, Used: c}
		}
	}
	if e == nil {
		return nil
	}
	e.Usage = u
	if b.Cost > 0 {
		e.Cost = s.total(run)
	}
	return e
}
