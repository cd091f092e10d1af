package pipeline_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

// An agent with an output type gets its final output decoded by the core;
// OutputAs reads it as the type, and refuses a type the agent does not
// produce.
func ExampleOutputAs() {
	type Forecast struct {
		City  string `json:"city"`
		TempC int    `json:"temp_c"`
	}
	forecast, err := tool.Output[Forecast]()
	if err != nil {
		fmt.Println(err)
		return
	}
	agent := &pipeline.Agent{
		Name:   "forecaster",
		Output: forecast,
		Model:  scripted.New(scripted.Reply(`{"city":"Oslo","temp_c":21}`)),
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("Forecast for Oslo?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := pipeline.OutputAs[Forecast](res)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d °C\n", f.City, f.TempC)

	_, err = pipeline.OutputAs[string](res)
	fmt.Println(errors.Is(err, pipeline.ErrOutputType), err)
	// Output:
	// Oslo: 21 °C
	// true pipeline: final output of agent "forecaster" is pipeline_test.Forecast, not string
}

// A streamed run that needs a human ends its stream with a result that
// holds the interruptions, not a final output. Once the call is decided,
// ResumeStream streams the rest of the same run: the approved call runs
// and the model answers.
func ExampleRunner_ResumeStream() {
	ctx := context.Background()
	agent := &pipeline.Agent{
		Name:  "forecaster",
		Tools: []pipeline.Tool{weather()},
		Model: scripted.New(
			scripted.Respond(scripted.Call("weather", `{"City":"Quito"}`)),
			scripted.Reply("It is sunny in Quito."),
		),
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("weather"))))

	// show prints a stream's events and returns its result.
	show := func(events func(func(pipeline.Event, error) bool)) *pipeline.Result {
		for ev, err := range events {
			if err != nil {
				fmt.Println("error:", err)
				return nil
			}
			switch ev := ev.(type) {
			case pipeline.ApprovalRequested:
				fmt.Printf("approval requested: %s %s\n", ev.Approval.Tool, ev.Approval.Arguments)
			case pipeline.ToolCallEnded:
				if ev.Status == pipeline.ToolCompleted {
					fmt.Printf("tool %s: %s\n", ev.Tool, ev.Output.Text())
				}
			case pipeline.TextDelta:
				fmt.Print(ev.Delta)
			case pipeline.RunCompleted:
				return ev.Result
			}
		}
		return nil
	}

	res := show(runner.Stream(ctx, agent, pipeline.UserInput("Weather in Quito?")))
	if res == nil {
		return
	}
	fmt.Println("paused with", len(res.Interruptions()), "call waiting")

	data, err := state.Marshal(res.State()) // a checkpoint: kept anywhere, for as long as needed
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
	res = show(runner.ResumeStream(ctx, agent, run))
	if res == nil {
		return
	}
	fmt.Println()
	fmt.Println("final:", res.FinalOutput())
	// Output:
	// approval requested: weather {"City":"Quito"}
	// paused with 1 call waiting
	// tool weather: sunny in Quito
	// It is sunny in Quito.
	// final: It is sunny in Quito.
}
