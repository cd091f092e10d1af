package tool_test

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

// ExampleContent shows a tool that answers with an image: the model's next
// call gets the function_call_output with the image part.
func ExampleContent() {
	type PlotArgs struct {
		Series []float64 `json:"series"`
	}
	plot := tool.Func("plot", "Plots a series as a PNG chart.",
		func(ctx context.Context, in PlotArgs) (tool.Content, error) {
			return tool.Content{
				state.TextPart(fmt.Sprintf("A chart of %d points:", len(in.Series))),
				state.ImageURL("data:image/png;base64,iVBORw0KGgo=", "low"),
			}, nil
		})
	model := scripted.New(
		scripted.CallTool("plot", `{"series":[1,4,2]}`),
		scripted.Reply("It peaks at the second point."),
	)
	agent := &pipeline.Agent{Name: "analyst", Model: model, Tools: []pipeline.Tool{plot}}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("Plot 1, 4, 2."), pipeline.WithRunID("run_1"))
	if err != nil {
		panic(err)
	}
	second := model.Calls()[1].Input
	out := second.At(second.Len() - 1)
	fmt.Println(out.Kind(), out.Text())
	fmt.Println(string(out.Raw()))
	fmt.Println(res.FinalOutput())
	// Output:
	// tool_output A chart of 3 points:
	// {"type":"function_call_output","call_id":"call_run_1_1_1","output":[{"type":"input_text","text":"A chart of 3 points:"},{"type":"input_image","detail":"low","image_url":"data:image/png;base64,iVBORw0KGgo="}]}
	// It peaks at the second point.
}
