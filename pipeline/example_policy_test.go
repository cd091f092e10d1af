package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A run with a cost limit stops once its model calls cost that much; its
// state, found on the error, resumes on a runner with a larger budget and
// goes on where it stopped, with the cost so far counted.
func ExampleWithBudget() {
	prices := map[string]pipeline.Price{"scripted": {Input: 2, Output: 8}} // per million tokens
	used := state.Usage{InputTokens: 250_000, OutputTokens: 50_000}        // 0.50 + 0.40 per call
	search := pipeline.NewTool(pipeline.ToolSpec{Name: "search"}, func(context.Context, json.RawMessage) (string, error) {
		return "3 results", nil
	})
	agent := &pipeline.Agent{Name: "researcher", Tools: []pipeline.Tool{search}, Model: scripted.New(
		scripted.CallTool("search", `{}`).WithUsage(used),
		scripted.CallTool("search", `{}`).WithUsage(used),
		scripted.Reply("Here is what I found.").WithUsage(used),
	)}
	ctx := context.Background()
	runner := pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{Cost: 1.5, Prices: prices}))
	_, err := runner.Run(ctx, agent, pipeline.UserInput("Research this."))
	fmt.Println(err)
	if be, ok := errors.AsType[*pipeline.BudgetError](err); ok {
		fmt.Printf("tokens so far: %d in, %d out\n", be.Usage.InputTokens, be.Usage.OutputTokens)
	}

	st, _ := pipeline.StateOf(err)
	larger := pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{Cost: 5, Prices: prices}))
	res, err := larger.Resume(ctx, agent, st)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())
	// Output:
	// pipeline: run budget exceeded: cost 1.8 of 1.5
	// tokens so far: 500000 in, 100000 out
	// Here is what I found.
}
