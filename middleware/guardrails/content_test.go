package guardrails_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

// TestToolOutputContent: a tool output guardrail sees a content output's
// text; a replacement drops the parts with the text they went with, and
// the event, the run and the model's next input agree, plain and streamed.
func TestToolOutputContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replace bool
		wantRaw string
	}{
		{name: "allowed", wantRaw: `{"type":"function_call_output","call_id":"call_r_1_1","output":[{"type":"input_text","text":"secret chart"},{"type":"input_image","detail":"auto","file_id":"file-1"}]}`},
		{name: "replaced", replace: true, wantRaw: `{"type":"function_call_output","call_id":"call_r_1_1","output":"[redacted]"}`},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(map[bool]string{false: tt.name, true: tt.name + "/streamed"}[stream], func(t *testing.T) {
				t.Parallel()
				var seen string
				check := func(ctx context.Context, a *pipeline.Agent, o pipeline.ToolOutcome) (guardrails.Verdict, error) {
					seen = o.Result.Output
					if tt.replace {
						return guardrails.ReplaceOutput("[redacted]", nil), nil
					}
					return guardrails.Verdict{}, nil
				}
				chart := tool.Func("chart", "Draws.", func(ctx context.Context, in struct{}) (tool.Content, error) {
					return tool.Content{state.TextPart("secret chart"), state.ImageFile("file-1", "")}, nil
				})
				model := scripted.New(scripted.CallTool("chart", `{}`), scripted.Reply("done"))
				agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{chart}}
				runner := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.ToolOutput(check)))
				var ended state.Item
				if stream {
					for ev, err := range runner.Stream(context.Background(), agent, pipeline.UserInput("draw"), pipeline.WithRunID("r")) {
						if err != nil {
							t.Fatal(err)
						}
						if e, ok := ev.(pipeline.ToolCallEnded); ok {
							ended = e.Output
						}
					}
				} else if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("draw"), pipeline.WithRunID("r")); err != nil {
					t.Fatal(err)
				}
				if seen != "secret chart" {
					t.Errorf("the guardrail saw %q", seen)
				}
				in := model.Calls()[1].Input
				if got := string(in.At(in.Len() - 1).Raw()); got != tt.wantRaw {
					t.Errorf("model input\n got %s\nwant %s", got, tt.wantRaw)
				}
				if stream && string(ended.Raw()) != tt.wantRaw {
					t.Errorf("ToolCallEnded output %s", ended.Raw())
				}
			})
		}
	}
}
