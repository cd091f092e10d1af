package pipelinetest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

// upper is a middleware under test: it upper-cases tool outputs.
var upper = pipeline.Middleware{
	Name: "upper",
	Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			res, err := next.CallTool(ctx, c)
			if err == nil {
				res.Output = strings.ToUpper(res.Output)
			}
			return res, err
		})
	},
}

func Example() {
	rec := &pipelinetest.Recorder{Result: &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "sunny"}}
	h := pipelinetest.Wrap(upper, rec)

	// In a test, pipelinetest.NewTurn(t, pipelinetest.WithResponse(...))
	// builds the turn and its calls with their positions.
	item := state.ToolCall("fc_1", "call_1", "get_weather", `{"city":"Oslo"}`).WithSeq(2)
	call := &pipeline.ToolCall{Item: item, Name: item.Name(), CallID: item.CallID(), Arguments: item.Text(), OutputSeq: 3}
	res, err := h.Tool.CallTool(context.Background(), call)
	fmt.Println(res.Output, err)
	for _, c := range rec.ToolCalls() {
		fmt.Println(c.Name, c.CallID, c.Arguments, c.OutputSeq)
	}
	// Output:
	// SUNNY <nil>
	// get_weather call_1 {"city":"Oslo"} 3
}
