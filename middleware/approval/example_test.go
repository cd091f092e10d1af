package approval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// The approval cycle: interrupt → state.Marshal → state.Unmarshal (in any
// process) → approve → Resume.
func Example_approvalCycle() {
	ctx := context.Background()
	deleteFile := pipeline.NewTool(pipeline.ToolSpec{Name: "delete_file"}, func(_ context.Context, args json.RawMessage) (string, error) {
		return "deleted", nil
	})
	agent := &pipeline.Agent{
		Name:  "janitor",
		Model: scripted.New(scripted.CallTool("delete_file", `{"path":"/tmp/x"}`), scripted.Reply("All clean.")),
		Tools: []pipeline.Tool{deleteFile},
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("delete_file"))))

	res, err := runner.Run(ctx, agent, pipeline.UserInput("clean up /tmp"))
	if err != nil {
		panic(err)
	}
	for _, a := range res.Interruptions() {
		fmt.Printf("waiting: %s %s\n", a.Tool, a.Arguments)
	}
	checkpoint, err := state.Marshal(res.State())
	if err != nil {
		panic(err)
	}

	run, err := state.Unmarshal(checkpoint) // later, anywhere
	if err != nil {
		panic(err)
	}
	if err := run.Approve(run.Pending()[0].CallID); err != nil {
		panic(err)
	}
	res, err = runner.Resume(ctx, agent, run)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.FinalOutput())
	// Output:
	// waiting: delete_file {"path":"/tmp/x"}
	// All clean.
}

// Policies combine: hold every call of "transfer_money", and any call of
// "send_email" whose arguments name an outside address.
func ExampleAny() {
	outside := approval.PolicyFunc(func(_ context.Context, c *pipeline.ToolCall) (bool, error) {
		var args struct{ To string }
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
			return true, err // fail closed
		}
		return c.Name == "send_email" && !strings.HasSuffix(args.To, "@example.com"), nil
	})
	policy := approval.Any(approval.ByTool("transfer_money"), outside)
	for _, c := range []*pipeline.ToolCall{
		{Name: "send_email", Arguments: `{"to":"bob@example.com"}`},
		{Name: "send_email", Arguments: `{"to":"eve@elsewhere.org"}`},
		{Name: "transfer_money", Arguments: `{}`},
	} {
		need, _ := policy.NeedsApproval(context.Background(), c)
		fmt.Println(c.Name, c.Arguments, need)
	}
	// Output:
	// send_email {"to":"bob@example.com"} false
	// send_email {"to":"eve@elsewhere.org"} true
	// transfer_money {} true
}
