package pipeline_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// askingTool asks two questions in turn, as an MCP tool under
// mcp.WithElicitation does: a *pipeline.ElicitationError until the run
// holds an answer to each, then the answers.
type askingTool struct{}

var questions = []state.Elicitation{
	{Server: "s", Message: "first?", Schema: `{"type":"object"}`},
	{Server: "s", Message: "second?", Schema: `{"type":"object"}`},
}

func (askingTool) Spec() pipeline.ToolSpec { return pipeline.ToolSpec{Name: "ask"} }

func (askingTool) Call(_ context.Context, c *pipeline.ToolCall) (string, error) {
	out := ""
	for _, q := range questions {
		d, ok := c.Turn.Run.ElicitationAnswerFor(c.Name, c.CallID, q)
		if !ok {
			return "", &pipeline.ElicitationError{Tool: c.Name, CallID: c.CallID, Elicitation: q}
		}
		out += d.Answer.Content
	}
	return out, nil
}

// TestElicitationPauses: a tool's *ElicitationError pauses the run with
// the request on the interruption, streamed or not; a second request of
// the same call after the first was answered replaces it.
func TestElicitationPauses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.CallTool("ask", `{}`), scripted.Reply("done")), Tools: []pipeline.Tool{askingTool{}}}
	runner := pipeline.NewRunner()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range questions {
		in := res.Interruptions()
		if len(in) != 1 || in[0].Elicitation != q || in[0].Tool != "ask" {
			t.Fatalf("pause %d: interruptions %+v, want the request %+v", i, in, q)
		}
		run := res.State()
		if err := run.AnswerElicitation(in[0].CallID, state.Accept, `{"q":`+string(rune('1'+i))+`}`); err != nil {
			t.Fatal(err)
		}
		var requested []state.Approval
		res = nil
		for ev, err := range runner.ResumeStream(ctx, agent, run) {
			if err != nil {
				t.Fatal(err)
			}
			switch ev := ev.(type) {
			case pipeline.ApprovalRequested:
				requested = append(requested, ev.Approval)
			case pipeline.RunCompleted:
				res = ev.Result
			}
		}
		if i == 0 && (len(requested) != 1 || requested[0].Elicitation != questions[1]) {
			t.Fatalf("streamed requests %+v, want the second question", requested)
		}
	}
	if res.Interrupted() || res.FinalOutput() != "done" {
		t.Fatalf("final %q, interruptions %+v", res.FinalOutput(), res.Interruptions())
	}
	if got := res.State().Items().At(res.State().Items().Len() - 2).Text(); got != `{"q":1}{"q":2}` {
		t.Fatalf("tool output %q, want both answers", got)
	}
}
