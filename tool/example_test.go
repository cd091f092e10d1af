package tool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

type WeatherArgs struct {
	City string `json:"city" jsonschema:"description=City name"`
	Days int    `json:"days" jsonschema:"minimum=1,maximum=7"`
}

func ExampleFunc() {
	weather := tool.Func("get_weather", "Forecast for a city.",
		func(ctx context.Context, in WeatherArgs) (string, error) {
			return fmt.Sprintf("%s: sunny for %d days", in.City, in.Days), nil
		})
	fmt.Println(string(weather.Spec().Parameters))

	out, err := weather.Call(context.Background(), &pipeline.ToolCall{CallID: "call_1", Arguments: `{"city":"Oslo","days":3}`})
	fmt.Println(out, err)

	_, err = weather.Call(context.Background(), &pipeline.ToolCall{CallID: "call_2", Arguments: `{"city":"Oslo","days":9}`})
	fmt.Println(err)
	// Output:
	// {"properties":{"city":{"type":"string","description":"City name"},"days":{"type":"integer","maximum":7,"minimum":1}},"additionalProperties":false,"type":"object","required":["city","days"]}
	// Oslo: sunny for 3 days <nil>
	// pipeline: tool "get_weather" call call_2: days: 9 is more than the maximum 7
}

func ExampleFunc_structuredOutput() {
	type In struct {
		Items []string `json:"items"`
	}
	type Out struct {
		Count int `json:"count"`
	}
	count := tool.Func("count", "Counts items.", func(ctx context.Context, in In) (Out, error) {
		return Out{Count: len(in.Items)}, nil
	})
	out, _ := count.Call(context.Background(), &pipeline.ToolCall{Arguments: `{"items":["a","b"]}`})
	fmt.Println(out)
	// Output:
	// {"count":2}
}

func ExampleNeedsApprovalFunc() {
	type In struct {
		Path string `json:"path"`
	}
	del := tool.Func("delete_file", "Deletes a file.",
		func(ctx context.Context, in In) (string, error) { return "deleted " + in.Path, nil },
		tool.NeedsApprovalFunc(func(ctx context.Context, c *pipeline.ToolCall) (bool, error) {
			return c.Arguments != `{"path":"/tmp/scratch"}`, nil
		}))
	ar := del.(pipeline.ApprovalRequirer)
	for _, args := range []string{`{"path":"/tmp/scratch"}`, `{"path":"/etc/passwd"}`} {
		need, _ := ar.NeedsApproval(context.Background(), &pipeline.ToolCall{Arguments: args})
		fmt.Println(args, need)
	}
	// Output:
	// {"path":"/tmp/scratch"} false
	// {"path":"/etc/passwd"} true
}

// Example_runner shows a tool in a run: the model's bad call is reported
// back to it, and it corrects itself.
func Example_runner() {
	weather := tool.Func("get_weather", "Forecast for a city.",
		func(ctx context.Context, in WeatherArgs) (string, error) {
			return fmt.Sprintf("%s: sunny for %d days", in.City, in.Days), nil
		})
	agent := &pipeline.Agent{
		Name:  "assistant",
		Tools: []pipeline.Tool{weather},
		Model: scripted.New(
			scripted.CallTool("get_weather", `{"city":"Oslo","days":"three"}`),
			scripted.CallTool("get_weather", `{"city":"Oslo","days":3}`),
			scripted.Reply("Sunny in Oslo."),
		),
	}
	res, err := pipeline.NewRunner(pipeline.WithInvalidCallsToModel()).Run(context.Background(), agent, pipeline.UserInput("Weather in Oslo?"), pipeline.WithRunID("run_1"))
	if err != nil {
		fmt.Println(errors.Unwrap(err))
		return
	}
	for _, it := range res.NewItems() {
		fmt.Printf("%s %s\n", it.Kind(), it.Text())
	}
	fmt.Println(res.FinalOutput())
	// Output:
	// user_message Weather in Oslo?
	// tool_call {"city":"Oslo","days":"three"}
	// tool_output pipeline: tool "get_weather" call call_run_1_1_1: days: want integer, got string
	// tool_call {"city":"Oslo","days":3}
	// tool_output Oslo: sunny for 3 days
	// assistant_message Sunny in Oslo.
	// Sunny in Oslo.
}

func ExampleOutput() {
	type Verdict struct {
		Label      string  `json:"label" jsonschema:"enum=spam,enum=ham"`
		Confidence float64 `json:"confidence" jsonschema:"minimum=0,maximum=1"`
	}
	verdict, err := tool.Output[Verdict]()
	if err != nil {
		panic(err)
	}
	agent := &pipeline.Agent{
		Name:   "classifier",
		Model:  scripted.New(scripted.Reply(`{"label":"spam","confidence":0.97}`)),
		Output: verdict,
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("WIN A PRIZE"))
	if err != nil {
		panic(err)
	}
	v, err := pipeline.OutputAs[Verdict](res)
	fmt.Printf("%+v %v\n", v, err)

	type Scores struct {
		ByLabel map[string]float64 `json:"by_label"`
	}
	_, err = tool.Output[Scores]()
	fmt.Println(err)
	// Output:
	// {Label:spam Confidence:0.97} <nil>
	// tool: output type tool_test.Scores: field by_label: a map has no fixed properties in strict mode (or use tool.AllowNonStrict)
}
