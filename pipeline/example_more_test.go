package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// weather is a tool the examples call.
func weather() pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: "weather", Description: "Returns the weather in a city."},
		func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ City string }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			return "sunny in " + in.City, nil
		})
}

// Stream runs the same loop as Run and yields its events as they happen:
// text deltas before the output guardrails run, then the result.
func ExampleRunner_Stream() {
	agent := &pipeline.Agent{
		Name:  "forecaster",
		Tools: []pipeline.Tool{weather()},
		Model: scripted.New(
			scripted.Respond(scripted.Call("weather", `{"City":"Oslo"}`)),
			scripted.Reply("It is sunny in Oslo."),
		),
	}
	var text strings.Builder
	for ev, err := range pipeline.NewRunner().Stream(context.Background(), agent, pipeline.UserInput("Weather in Oslo?")) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev := ev.(type) {
		case pipeline.TurnStarted:
			fmt.Println("turn", ev.Turn)
		case pipeline.TextDelta:
			text.WriteString(ev.Delta)
		case pipeline.RunCompleted:
			fmt.Println("streamed:", text.String())
			fmt.Println("final:", ev.Result.FinalOutput())
		}
	}
	// Output:
	// turn 1
	// turn 2
	// streamed: It is sunny in Oslo.
	// final: It is sunny in Oslo.
}

// A run that needs a human pauses; its state goes through JSON (a file, a
// database, another process), the decision is made on the decoded state,
// and Resume goes on from there.
func ExampleRunner_Resume() {
	ctx := context.Background()
	agent := &pipeline.Agent{
		Name:  "forecaster",
		Tools: []pipeline.Tool{weather()},
		Model: scripted.New(
			scripted.Respond(scripted.Call("weather", `{"City":"Lima"}`)),
			scripted.Reply("It is sunny in Lima."),
		),
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("weather"))))
	res, err := runner.Run(ctx, agent, pipeline.UserInput("Weather in Lima?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range res.Interruptions() {
		fmt.Printf("waiting: %s %s\n", a.Tool, a.Arguments)
	}
	data, err := state.Marshal(res.State()) // saved anywhere, for as long as needed
	if err != nil {
		fmt.Println(err)
		return
	}

	run, err := state.Unmarshal(data) // later, in any process
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := run.Approve(res.Interruptions()[0].CallID); err != nil {
		fmt.Println(err)
		return
	}
	res, err = runner.Resume(ctx, agent, run)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("final:", res.FinalOutput())
	// Output:
	// waiting: weather {"City":"Lima"}
	// final: It is sunny in Lima.
}

// When applies a middleware to some turns only: here, a tool-stage
// middleware that logs calls, from the second turn on.
func ExampleWhen() {
	logCalls := pipeline.Middleware{
		Name: "log-calls",
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				fmt.Println("calling", c.Name, "in turn", c.Turn.Number)
				return next.CallTool(ctx, c)
			})
		},
	}
	agent := &pipeline.Agent{
		Name:  "forecaster",
		Tools: []pipeline.Tool{weather()},
		Model: scripted.New(
			scripted.Respond(scripted.Call("weather", `{"City":"Oslo"}`)),
			scripted.Respond(scripted.Call("weather", `{"City":"Lima"}`)),
			scripted.Reply("Sunny in both."),
		),
	}
	later := pipeline.When(func(t *pipeline.Turn) bool { return t.Number >= 2 }, logCalls)
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(later)).Run(context.Background(), agent, pipeline.UserInput("Oslo and Lima?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("final:", res.FinalOutput())
	// Output:
	// calling weather in turn 2
	// final: Sunny in both.
}

// An agent can be another agent's tool: the nested run starts from the
// input the model gives it, and its final output is the call's output.
func ExampleAgentTool() {
	translator := &pipeline.Agent{
		Name:  "translator",
		Model: scripted.New(scripted.Reply("Hei verden")),
	}
	agent := &pipeline.Agent{
		Name:  "assistant",
		Tools: []pipeline.Tool{pipeline.AgentTool(translator, pipeline.WithAgentToolDescription("Translates into Norwegian."))},
		Model: scripted.New(
			scripted.Respond(scripted.Call("translator", `{"input":"Hello world"}`)),
			scripted.Reply("In Norwegian: Hei verden"),
		),
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("Say hello world in Norwegian."))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range res.NewItems() {
		if it.Kind() == state.KindToolOutput {
			fmt.Println("translator returned:", it.Text())
		}
	}
	fmt.Println("final:", res.FinalOutput())
	// Output:
	// translator returned: Hei verden
	// final: In Norwegian: Hei verden
}

// A middleware is a struct of optional wrap functions, one per stage. This
// one times every tool call and notes the slow ones in the call's result.
func ExampleMiddleware() {
	const slow = time.Second
	timing := pipeline.Middleware{
		Name: "timing",
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				start := time.Now()
				res, err := next.CallTool(ctx, c)
				if d := time.Since(start); d > slow {
					fmt.Printf("%s took %v\n", c.Name, d)
				}
				return res, err
			})
		},
	}
	agent := &pipeline.Agent{
		Name:  "forecaster",
		Tools: []pipeline.Tool{weather()},
		Model: scripted.New(
			scripted.Respond(scripted.Call("weather", `{"City":"Oslo"}`)),
			scripted.Reply("It is sunny in Oslo."),
		),
	}
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(timing)).Run(context.Background(), agent, pipeline.UserInput("Weather in Oslo?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("final:", res.FinalOutput())
	// Output:
	// final: It is sunny in Oslo.
}

// A Stack puts the middleware a program uses in the recommended order,
// whatever order they are written in; the places left empty are skipped.
func ExampleStack() {
	named := func(name string) pipeline.Middleware { return logStages(name) }
	stack := pipeline.Stack{
		Guardrails:  []pipeline.Middleware{named("guardrails")},
		Approval:    named("approval"),
		Persistence: named("persistence"),
		Tracing:     named("tracing"),
	}
	for _, m := range stack.Middleware() {
		fmt.Println(m.Name)
	}
	// Output:
	// tracing
	// persistence
	// approval
	// guardrails
}
