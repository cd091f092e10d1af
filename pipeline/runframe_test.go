package pipeline_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestRunStageCalledTwice: a run stage that serves the same call twice
// (a retry on a fresh state, say) gets a result of its own each time;
// the second run does not write over the first one's result, though the
// core keeps a run's result and Turn in one allocation with the call.
func TestRunStageCalledTwice(t *testing.T) {
	t.Parallel()
	var first, second *pipeline.Result
	twice := pipeline.Middleware{
		Name: "twice",
		Run: func(next pipeline.RunHandler) pipeline.RunHandler {
			return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
				var err error
				if first, err = next.ServeRun(ctx, c); err != nil {
					return first, err
				}
				again := *c
				again.Run = state.NewRun("again", c.Agent.Name)
				second, err = next.ServeRun(ctx, &again)
				return first, err
			})
		},
	}
	answers := []string{"one", "two"}
	agent := &pipeline.Agent{Name: "a", Model: scripted.Generate(func(n int) scripted.Step {
		return scripted.Reply(answers[(n-1)%len(answers)])
	})}
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(twice)).Run(context.Background(), agent, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if first == second {
		t.Fatal("the two runs of the call returned the same result")
	}
	if got := res.FinalOutput(); got != "one" {
		t.Errorf("first run's final output = %q, want %q", got, "one")
	}
	if got := second.FinalOutput(); got != "two" {
		t.Errorf("second run's final output = %q, want %q", got, "two")
	}
	if got := res.State().ID(); got == "again" {
		t.Errorf("first run's result reads the state of run %q, the second one's", got)
	}
}
