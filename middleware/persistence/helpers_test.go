package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const sid = "chat"

// echoTool returns a tool that answers "<name> done", recording its runs,
// and calls during (if set) while it runs.
func echoTool(name string, runs *pipelinetest.Ledger, during func(ctx context.Context, c *pipeline.ToolCall)) pipeline.Tool {
	return &pipelinetest.EffectTool{Name: name, Ledger: runs, During: func(ctx context.Context, c *pipeline.ToolCall) error {
		if during != nil {
			during(ctx, c)
		}
		return nil
	}}
}

type toolFunc struct {
	name string
	fn   func(ctx context.Context, c *pipeline.ToolCall) (string, error)
}

func (f toolFunc) Spec() pipeline.ToolSpec { return pipeline.ToolSpec{Name: f.name} }
func (f toolFunc) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	return f.fn(ctx, c)
}

// probeStages are the names under which probe counts the stages it sees.
var probeStages = []string{"stage:run", "stage:turn", "stage:tool"}

// probe is a middleware that records, in runs, each run, turn and tool
// stage that reaches it, so a test can check that nothing inside an outer
// middleware ran.
func probe(runs *pipelinetest.Ledger) pipeline.Middleware {
	return pipeline.Middleware{
		Name: "probe",
		Run: func(next pipeline.RunHandler) pipeline.RunHandler {
			return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
				runs.Record("stage:run", "")
				return next.ServeRun(ctx, c)
			})
		},
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
				runs.Record("stage:turn", "")
				return next.ServeTurn(ctx, t)
			})
		},
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				runs.Record("stage:tool", "")
				return next.CallTool(ctx, c)
			})
		},
	}
}

// requireApproval is a test-local approval middleware: calls to the named
// tool wait for a decision recorded in the run's state.
func requireApproval(tool string) pipeline.Middleware {
	return pipeline.Middleware{Name: "approval", Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			if c.Name != tool {
				return next.CallTool(ctx, c)
			}
			d, _, ok := c.Turn.Run.DecisionFor(c.Name, c.CallID)
			switch {
			case !ok:
				return &pipeline.ToolResult{Status: pipeline.ToolPending}, nil
			case d.Verdict == state.Rejected:
				return &pipeline.ToolResult{Status: pipeline.ToolRejected, Output: "Tool execution was not approved."}, nil
			}
			return next.CallTool(ctx, c)
		})
	}}
}

// decideAll records a verdict on every pending call of run.
func decideAll(run *state.Run, v state.Verdict) {
	for _, a := range run.Pending() {
		runcore.AddDecision(run, state.Decision{Tool: a.Tool, CallID: a.CallID, Fingerprint: a.Fingerprint(), Verdict: v})
	}
}

// bad is what the test checks' verdicts look for.
const bad = "secret"

// tripOnBad trips when the output contains bad.
func tripOnBad(out string) error {
	if strings.Contains(out, bad) {
		return fmt.Errorf("check: output contains %q: %w", bad, pipeline.ErrOutputRejected)
	}
	return nil
}

// outputCheck is a test-local output guardrail: a turn stage that checks
// a final output after the turn, records its result in the state first,
// and returns verdict's error. before, if set, runs just before the
// verdict (to look at the store then, or to cancel the run).
func outputCheck(verdict func(out string) error, before func(ctx context.Context, t *pipeline.Turn)) pipeline.Middleware {
	return pipeline.Middleware{Name: "check", Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			if err := next.ServeTurn(ctx, t); err != nil || t.Next.Kind != pipeline.NextFinalOutput {
				return err
			}
			if before != nil {
				before(ctx, t)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			err := verdict(t.Next.Output)
			t.Run.AddGuardrailResult(state.GuardrailResult{Name: "check", Stage: state.StageOutput, Turn: t.Number, Tripped: errors.Is(err, pipeline.ErrOutputRejected)})
			return err
		})
	}}
}

// show renders items as "kind:text", the form the tests assert on.
func show(items []state.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		k := it.Kind().String()
		switch it.Kind() {
		case state.KindUserMessage:
			k = "user"
		case state.KindAssistantMessage:
			k = "msg"
		case state.KindToolCall:
			out[i] = "call:" + it.Name()
			continue
		case state.KindToolOutput:
			k = "out"
		case state.KindHandoffCall:
			out[i] = "handoff:" + it.Name()
			continue
		}
		out[i] = k + ":" + it.Text()
	}
	return out
}

func list(t testing.TB, s session.Store) []state.Item {
	t.Helper()
	items, err := s.List(context.Background(), sid, 0)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return items
}

// validInput reports why items are not valid Responses-API input: a call
// without its output, an output without its call or before it.
func validInput(items []state.Item) error {
	calls := map[string]bool{}
	outs := map[string]bool{}
	for _, it := range items {
		switch {
		case it.Kind().IsCall():
			if calls[it.CallID()] {
				return fmt.Errorf("call %s stored twice", it.CallID())
			}
			calls[it.CallID()] = true
		case it.Kind().IsOutput():
			if !calls[it.CallID()] {
				return fmt.Errorf("output of %s without a call before it", it.CallID())
			}
			if outs[it.CallID()] {
				return fmt.Errorf("output of %s stored twice", it.CallID())
			}
			outs[it.CallID()] = true
		}
	}
	for id := range calls {
		if !outs[id] {
			return fmt.Errorf("call %s has no output", id)
		}
	}
	return nil
}

// validPrefix reports why got (a session observed mid-run, one run) is not
// a valid prefix of the run's final items: it must be valid model input,
// hold the run's items at their positions, and hold every message and
// reasoning item of the run placed before its last stored call or message
// (outputs sit after all of their response's items, so they do not count).
func validPrefix(got, final []state.Item) error {
	if err := validInput(got); err != nil {
		return err
	}
	if len(got) == 0 {
		return nil
	}
	have := map[int64]state.Item{}
	for _, it := range got {
		have[it.Seq()] = it
	}
	var last int64
	for _, it := range got {
		if !it.Kind().IsOutput() {
			last = it.Seq()
		}
	}
	for _, it := range final {
		if it.Seq() > last {
			break
		}
		g, ok := have[it.Seq()]
		switch {
		case ok && !g.Equal(it) && g.Text() != it.Text():
			return fmt.Errorf("position %d holds %s, the run has %s", it.Seq(), g, it)
		case !ok && !it.Kind().IsCall() && !it.Kind().IsOutput():
			return fmt.Errorf("%s is missing before position %d", it, last)
		}
	}
	return nil
}
