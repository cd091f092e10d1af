package persistence_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// countingAsker asks the user one question, as an MCP tool under
// mcp.WithElicitation does, and counts the calls that ran with the
// answer.
type countingAsker struct{ ran *atomic.Int64 }

var question = state.Elicitation{Server: "s", Message: "sure?"}

func (countingAsker) Spec() pipeline.ToolSpec { return pipeline.ToolSpec{Name: "ask"} }

func (t countingAsker) Call(_ context.Context, c *pipeline.ToolCall) (string, error) {
	d, ok := c.Turn.Run.ElicitationAnswerFor(c.Name, c.CallID, question)
	if !ok {
		return "", &pipeline.ElicitationError{Tool: c.Name, CallID: c.CallID, Elicitation: question}
	}
	t.ran.Add(1)
	return "answered " + d.Answer.Action.String(), nil
}

// TestElicitationOutputReused: a state answered and resumed once, whose
// tool ran and was committed before the run failed, resumes again from
// its checkpoint with the committed output: the tool does not run twice,
// and the call is not taken for another state's.
func TestElicitationOutputReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memory.New()
	var ran atomic.Int64
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{countingAsker{&ran}},
		Model: scripted.New(scripted.CallTool("ask", `{}`), scripted.Fail(errors.New("model down")), scripted.Reply("done"))}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
	res, err := runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithSessionID("s"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("run = %v, %v; want a pause", res, err)
	}
	run := res.State()
	if err := run.AnswerElicitation(res.Interruptions()[0].CallID, state.Accept, ""); err != nil {
		t.Fatal(err)
	}
	data, err := state.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Resume(ctx, agent, run); err == nil {
		t.Fatal("resume succeeded; want the model's failure after the tool ran")
	}
	again, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	res, err = runner.Resume(ctx, agent, again)
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("second resume = %v, %v", res, err)
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the tool ran %d times with the answer, want once", n)
	}
}
