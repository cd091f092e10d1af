package logging_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// TestNestedTripLoggedOnce: a nested run's tripped guardrail, which the
// outer run's state records too, is logged once, by the nested run.
func TestNestedTripLoggedOnce(t *testing.T) {
	t.Parallel()
	log, logs := observe(zap.DebugLevel)
	inner := &pipeline.Agent{Name: "researcher", Model: scripted.New(scripted.Reply("the SECRET plan"))}
	outer := &pipeline.Agent{
		Name:  "boss",
		Model: scripted.New(scripted.CallTool("researcher", `{"input":"look"}`), scripted.Reply("done")),
		Tools: []pipeline.Tool{pipeline.AgentTool(inner)},
	}
	noSecret := guardrails.Output(func(_ context.Context, _ *pipeline.Agent, out string) (guardrails.Verdict, error) {
		if strings.Contains(out, "SECRET") {
			return guardrails.Trip("secret"), nil
		}
		return guardrails.Verdict{}, nil
	}, guardrails.WithName("no_secret"))
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(log), noSecret))
	if _, err := r.Run(context.Background(), outer, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessage("guardrail tripped").Len(); n != 1 {
		t.Errorf("%d tripped guardrails logged, want 1", n)
	}
}
