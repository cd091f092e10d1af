package persistence_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
)

func ExampleMiddleware() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	weather := pipeline.NewTool(pipeline.ToolSpec{Name: "weather"}, func(context.Context, json.RawMessage) (string, error) { return "sunny", nil })
	model := scripted.New(scripted.CallTool("weather", `{"city":"Paris"}`), scripted.Reply("It is sunny."), scripted.Reply("You asked about Paris."))
	agent := &pipeline.Agent{Name: "assistant", Model: model, Tools: []pipeline.Tool{weather}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))

	// Two runs of one session: the second starts from the first.
	for _, text := range []string{"Weather in Paris?", "What did I ask?"} {
		res, err := runner.Run(ctx, agent, pipeline.UserInput(text), pipeline.WithSessionID("user-42"))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.FinalOutput())
	}
	items, _ := store.List(ctx, "user-42", 0)
	for _, it := range items {
		fmt.Println(it.Kind(), it.Text())
	}
	// Output:
	// It is sunny.
	// You asked about Paris.
	// user_message Weather in Paris?
	// tool_call {"city":"Paris"}
	// tool_output sunny
	// assistant_message It is sunny.
	// user_message What did I ask?
	// assistant_message You asked about Paris.
}
