package tool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

// ChargeArgs are the arguments of the examples' charge tool.
type ChargeArgs struct {
	Cents int `json:"cents"`
}

// A tool with an external effect passes the call's idempotency key on, so
// that the service it calls can tell a retry from a new request. A Func's
// func gets only its arguments; CallFromContext gives it the call.
func ExampleCallFromContext() {
	charge := tool.Func("charge", "Charges the customer's card.",
		func(ctx context.Context, in ChargeArgs) (string, error) {
			call, ok := tool.CallFromContext(ctx)
			if !ok {
				return "", errors.New("charge: not called by the runner")
			}
			// e.g. req.Header.Set("Idempotency-Key", call.IdempotencyKey())
			fmt.Println("charging", in.Cents, "cents, key", call.IdempotencyKey())
			return "charged", nil
		})
	agent := &pipeline.Agent{Name: "billing", Tools: []pipeline.Tool{charge}, Model: scripted.New(
		scripted.CallTool("charge", `{"cents":1250}`),
		scripted.Reply("Done."),
	)}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("Charge 12.50."),
		pipeline.WithRunID("order-7"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())
	// Output:
	// charging 1250 cents, key order-7/call_order-7_1_1
	// Done.
}
