package tool_test

import (
	"context"
	"fmt"
	"time"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

type roleKey struct{}

// A tool enabled per run: the refund tool is offered only in runs whose
// context says the user is an agent of the support team. A model that
// calls it anyway gets a typed error as the call's output, and the tool
// does not run.
func ExampleWithEnabled() {
	refund := tool.Func("refund", "Refunds an order.",
		func(ctx context.Context, in struct {
			Order string `json:"order"`
		}) (string, error) {
			return "refunded " + in.Order, nil
		},
		tool.WithEnabled(func(ctx context.Context, _ *pipeline.Turn) bool {
			return ctx.Value(roleKey{}) == "support"
		}),
	)
	for _, role := range []string{"support", "customer"} {
		model := scripted.New(scripted.CallTool("refund", `{"order":"A-1"}`), scripted.Reply("ok"))
		agent := &pipeline.Agent{Name: "desk", Model: model, Tools: []pipeline.Tool{refund}}
		ctx := context.WithValue(context.Background(), roleKey{}, role)
		res, err := pipeline.NewRunner().Run(ctx, agent, pipeline.UserInput("Refund A-1"), pipeline.WithRunID("r1"))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: offered %v; output: %s\n", role, model.Calls()[0].Tools, res.NewItems()[2].Text())
	}
	// Output:
	// support: offered [refund]; output: refunded A-1
	// customer: offered []; output: pipeline: agent "desk" has tool "refund" disabled on this turn (call call_r1_1_1)
}

// A tool call that runs past its limit gets a typed error as its output,
// which the model sees and may act on.
func ExampleWithTimeout() {
	slow := tool.Func("slow_search", "Searches slowly.",
		func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done() // the call's context carries the deadline
			return "", ctx.Err()
		},
		tool.WithTimeout(10*time.Millisecond),
	)
	model := scripted.New(scripted.CallTool("slow_search", `{}`), scripted.Reply("Sorry, the search timed out."))
	agent := &pipeline.Agent{Name: "searcher", Model: model, Tools: []pipeline.Tool{slow}}
	res, err := pipeline.NewRunner(pipeline.WithToolErrorText(func(_ *pipeline.ToolCall, err error) string {
		return "error: " + err.Error()
	})).Run(context.Background(), agent, pipeline.UserInput("Find it"), pipeline.WithRunID("r1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.NewItems()[2].Text())
	fmt.Println(res.FinalOutput())
	// Output:
	// error: pipeline: tool "slow_search" call call_r1_1_1 timed out after 10ms
	// Sorry, the search timed out.
}
