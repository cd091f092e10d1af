package scripted_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

func ExampleNew() {
	lookup := pipeline.NewTool(pipeline.ToolSpec{Name: "lookup"}, func(ctx context.Context, args json.RawMessage) (string, error) {
		return "42", nil
	})
	model := scripted.New(
		scripted.Respond(scripted.Think("look it up"), scripted.Call("lookup", `{"q":"answer"}`)),
		scripted.Reply("The answer is 42."),
	)
	agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{lookup}}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("What is the answer?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())
	for _, c := range model.Calls() {
		fmt.Println("model saw", c.Input.Len(), "items, tools", c.Tools)
	}
	// Output:
	// The answer is 42.
	// model saw 1 items, tools [lookup]
	// model saw 4 items, tools [lookup]
}
