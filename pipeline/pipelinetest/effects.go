package pipelinetest

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/turnkit/turnkit/pipeline"
)

// A Ledger records every execution of a tool with its idempotency key, as
// the external system behind the tool would see it: the thing a test of
// crash safety or concurrency checks ("the transfer ran once", "a retry
// kept its key"). The zero value is ready to use and safe for concurrent
// use.
type Ledger struct {
	mu    sync.Mutex
	execs []Execution
}

// An Execution is one run of a tool.
type Execution struct {
	Tool string // the tool's name
	Key  string // the call's idempotency key ([pipeline.ToolCall.IdempotencyKey])
}

// Record adds an execution of tool under key.
func (l *Ledger) Record(tool, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.execs = append(l.execs, Execution{Tool: tool, Key: key})
}

// All returns every execution, in the order they were recorded.
func (l *Ledger) All() []Execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.execs)
}

// Keys returns the keys under which tool ran, in order, one per execution.
func (l *Ledger) Keys(tool string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.execs {
		if e.Tool == tool {
			out = append(out, e.Key)
		}
	}
	return out
}

// OfRun returns the executions of run runID's calls, in the order they
// were recorded: those whose key is the run's ID, a '/' and a call ID, as
// [pipeline.ToolCall.IdempotencyKey] makes it. A test reads them without
// knowing the model's call IDs. The executions of the runs nested in it
// (agent tools), whose IDs extend its own with '/', are included.
func (l *Ledger) OfRun(runID string) []Execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Execution
	for _, e := range l.execs {
		if strings.HasPrefix(e.Key, runID+"/") {
			out = append(out, e)
		}
	}
	return out
}

// Runs returns how many times tool ran.
func (l *Ledger) Runs(tool string) int {
	return l.count(func(e Execution) bool { return e.Tool == tool })
}

// Count returns how many times any tool ran under key.
func (l *Ledger) Count(key string) int {
	return l.count(func(e Execution) bool { return e.Key == key })
}

func (l *Ledger) count(match func(Execution) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.execs {
		if match(e) {
			n++
		}
	}
	return n
}

// Len returns the number of executions.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.execs)
}

// An EffectTool is a function tool with an external effect: each call
// records an [Execution] in its Ledger, then runs During, then answers
// Output. It stands in for a tool that moves money or sends mail in tests
// of what runs, and how often, across crashes, retries and approvals.
type EffectTool struct {
	// Name is the tool's name; required.
	Name string
	// Ledger records the executions; required.
	Ledger *Ledger
	// Description is the tool's description for the model; if empty, a
	// generic one.
	Description string
	// During, if set, runs in each call after the effect is recorded (to
	// crash a process, block until the call's context ends, or look at the
	// stores mid-call). A non-nil error is the call's error.
	During func(ctx context.Context, c *pipeline.ToolCall) error
	// Output, if set, makes the call's output; otherwise it is
	// "<name> done".
	Output func(c *pipeline.ToolCall) string
}

var _ pipeline.Tool = (*EffectTool)(nil)

// Spec returns the tool's specification: its name, its description and
// an object schema that takes any arguments.
func (e *EffectTool) Spec() pipeline.ToolSpec {
	desc := e.Description
	if desc == "" {
		desc = "Has an effect outside the run."
	}
	return pipeline.ToolSpec{Name: e.Name, Description: desc, Parameters: []byte(`{"type":"object"}`)}
}

// Call records the execution under the call's idempotency key, runs
// During and answers.
func (e *EffectTool) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	e.Ledger.Record(e.Name, c.IdempotencyKey())
	if e.During != nil {
		if err := e.During(ctx, c); err != nil {
			return "", err
		}
	}
	if e.Output != nil {
		return e.Output(c), nil
	}
	return e.Name + " done", nil
}
