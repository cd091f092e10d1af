package deferred_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool/deferred"
)

// An agent with many tools sends only the search tool at first; the model
// loads the tool it needs, which the next model call carries in full.
func ExampleNew() {
	tool := func(name, desc string) pipeline.Tool {
		return pipeline.NewTool(pipeline.ToolSpec{Name: name, Description: desc},
			func(context.Context, json.RawMessage) (string, error) { return name + " done", nil })
	}
	set := deferred.New(
		tool("restart_service", "Restarts a service."),
		tool("rotate_keys", "Rotates the API keys."),
		tool("scale_cluster", "Scales a cluster."),
	)
	model := scripted.New(
		scripted.CallTool(deferred.SearchToolName, `{"names":["rotate_keys"]}`),
		scripted.CallTool("rotate_keys", `{}`),
		scripted.Reply("Keys rotated."),
	)
	agent := &pipeline.Agent{Name: "ops", Model: model, Tools: set.Tools()}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(set.Middleware()))
	res, err := runner.Run(context.Background(), agent, pipeline.UserInput("Rotate the keys."))
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, c := range model.Calls() {
		fmt.Printf("call %d offered %v\n", i+1, c.Tools)
	}
	fmt.Println(res.FinalOutput())
	// Output:
	// call 1 offered [load_tools]
	// call 2 offered [load_tools rotate_keys]
	// call 3 offered [load_tools rotate_keys]
	// Keys rotated.
}
