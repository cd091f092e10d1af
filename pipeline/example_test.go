package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// logStages returns a middleware that prints before and after the turn
// and model stages.
func logStages(name string) pipeline.Middleware {
	return pipeline.Middleware{
		Name: name,
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
				fmt.Println(name, "turn: before")
				defer fmt.Println(name, "turn: after")
				return next.ServeTurn(ctx, t)
			})
		},
		Model: func(next pipeline.Model) pipeline.Model {
			return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				fmt.Println(name, "model: before")
				defer fmt.Println(name, "model: after")
				return next.Respond(ctx, c)
			})
		},
	}
}

// The first middleware is the outermost on every stage.
func ExampleChain() {
	chain := pipeline.Chain(logStages("outer"), logStages("inner"))
	agent := &pipeline.Agent{Name: "assistant", Model: scripted.New(scripted.Reply("hi"))}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(chain))
	if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("hello")); err != nil {
		fmt.Println(err)
	}
	// Output:
	// outer turn: before
	// inner turn: before
	// outer model: before
	// inner model: before
	// inner model: after
	// outer model: after
	// inner turn: after
	// outer turn: after
}

func ExampleRunner_Run() {
	add := pipeline.NewTool(pipeline.ToolSpec{Name: "add", Description: "Adds a and b."},
		func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			return fmt.Sprint(in.A + in.B), nil
		})
	agent := &pipeline.Agent{
		Name:  "calculator",
		Tools: []pipeline.Tool{add},
		Model: scripted.New(
			scripted.Respond(scripted.Think("use the tool"), scripted.Call("add", `{"A":2,"B":3}`)),
			scripted.Reply("2 + 3 = 5"),
		),
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("What is 2 + 3?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range res.NewItems() {
		fmt.Printf("%d %-17s %s\n", it.Seq(), it.Kind(), it.Text())
	}
	fmt.Println("final:", res.FinalOutput())
	// Output:
	// 1 user_message      What is 2 + 3?
	// 2 reasoning         use the tool
	// 3 tool_call         {"A":2,"B":3}
	// 4 tool_output       5
	// 5 assistant_message 2 + 3 = 5
	// final: 2 + 3 = 5
}
