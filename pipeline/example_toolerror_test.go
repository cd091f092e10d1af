package pipeline_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// QuotaError is the typed error of the examples' flaky tool.
type QuotaError struct{ Left int }

func (e *QuotaError) Error() string { return fmt.Sprintf("quota exceeded (%d left)", e.Left) }

// flakyTool fails on its first call and succeeds afterwards, printing the
// idempotency key of every call.
type flakyTool struct{ calls int }

func (t *flakyTool) Spec() pipeline.ToolSpec { return pipeline.ToolSpec{Name: "send"} }

func (t *flakyTool) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	t.calls++
	fmt.Println("send called, key", c.IdempotencyKey())
	if t.calls == 1 {
		return "", &QuotaError{Left: 0}
	}
	return "sent", nil
}

func flaky() pipeline.Tool { return &flakyTool{} }

// By default a tool's error is not the run's: it becomes the call's
// output, a text the model sees and may act on (WithToolErrorText writes
// it; the default is shown below). The typed error is kept
// beside it, for middleware ([ToolResult].Err, after the tool stage
// returns) and for a stream's consumer ([ToolCallEnded].Err).
func ExampleWithToolErrorText() {
	agent := &pipeline.Agent{Name: "mailer", Tools: []pipeline.Tool{flaky()}, Model: scripted.New(
		scripted.CallTool("send", `{}`),
		scripted.Reply("The quota is used up; try later."),
	)}
	inspect := pipeline.Middleware{Name: "inspect", Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			r, err := next.CallTool(ctx, c)
			var qe *QuotaError
			if err == nil && errors.As(r.Err, &qe) {
				fmt.Printf("middleware: %s failed, %d left; the model sees %q\n", c.Name, qe.Left, r.Output)
			}
			return r, err
		})
	}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(inspect))
	for ev, err := range runner.Stream(context.Background(), agent, pipeline.UserInput("Send it."), pipeline.WithRunID("m1")) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if end, ok := ev.(pipeline.ToolCallEnded); ok {
			fmt.Printf("event: %s %s, err %v\n", end.Tool, end.Status, end.Err)
		}
		if done, ok := ev.(pipeline.RunCompleted); ok {
			fmt.Println("final:", done.Result.FinalOutput())
		}
	}
	// Output:
	// send called, key m1/call_m1_1_1
	// middleware: send failed, 0 left; the model sees "An error occurred while running the tool. Please try again. Error: quota exceeded (0 left)"
	// event: send completed, err quota exceeded (0 left)
	// final: The quota is used up; try later.
}

// With WithToolErrorsAbort a tool's error ends the run with a *ToolError
// that wraps it. The call stays unanswered in the state: Resume runs it
// again under the same call ID, hence the same idempotency key, and the
// model is not asked again for it.
func ExampleWithToolErrorsAbort() {
	agent := &pipeline.Agent{Name: "mailer", Tools: []pipeline.Tool{flaky()}, Model: scripted.New(
		scripted.CallTool("send", `{}`),
		scripted.Reply("Sent."),
	)}
	runner := pipeline.NewRunner(pipeline.WithToolErrorsAbort())
	_, err := runner.Run(context.Background(), agent, pipeline.UserInput("Send it."), pipeline.WithRunID("m2"))
	var te *pipeline.ToolError
	var qe *QuotaError
	fmt.Println(errors.As(err, &te), te.Tool, te.CallID, errors.As(err, &qe))

	st, _ := pipeline.StateOf(err) // the run as it stopped
	res, err := runner.Resume(context.Background(), agent, st)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())
	// Output:
	// send called, key m2/call_m2_1_1
	// true send call_m2_1_1 true
	// send called, key m2/call_m2_1_1
	// Sent.
}
