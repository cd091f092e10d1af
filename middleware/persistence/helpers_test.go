package persistence_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/persistence/internal/faultsuite"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
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

// decideAll records a verdict on every pending call of run.
func decideAll(run *state.Run, v state.Verdict) {
	for _, a := range run.Pending() {
		runcore.AddDecision(run, state.Decision{Tool: a.Tool, CallID: a.CallID, Fingerprint: a.Fingerprint(), Verdict: v})
	}
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

// The helpers the fault suite shares with these tests.
const bad = faultsuite.Bad

var (
	requireApproval = faultsuite.RequireApproval
	tripOnBad       = faultsuite.TripOnBad
	outputCheck     = faultsuite.OutputCheck
	show            = faultsuite.Show
	list            = faultsuite.List
	validInput      = faultsuite.ValidInput
)
