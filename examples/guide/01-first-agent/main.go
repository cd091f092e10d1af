// Command 01-first-agent is the guide's first step (docs/guide.md): an
// agent with two typed tools, run once. One tool passes its call's
// idempotency key on, as a tool with external effects should; the other
// fails, and its error goes back to the model as the call's output.
//
//	go run ./examples/guide/01-first-agent                   # offline, on the scripted model
//	OPENAI_API_KEY=... go run ./examples/guide/01-first-agent # on OpenAI
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "01-first-agent:", err)
		os.Exit(1)
	}
}

// OrderArgs are the arguments of both tools.
type OrderArgs struct {
	Order string `json:"order" jsonschema:"description=Order number, e.g. A-17"`
}

// ErrCarrierDown is the tracking tool's error.
var ErrCarrierDown = errors.New("the carrier's tracking service is down")

func tools(w io.Writer) []pipeline.Tool {
	cancel := tool.Func("cancel_order", "Cancels an order that has not shipped.",
		func(ctx context.Context, in OrderArgs) (string, error) {
			call, _ := tool.CallFromContext(ctx)
			// A real tool sends the key with its request, e.g. as an
			// Idempotency-Key header, so a call run again is recognised.
			fmt.Fprintf(w, "  (cancel_order %s, idempotency key %s)\n", in.Order, call.IdempotencyKey())
			return "order " + in.Order + " cancelled", nil
		})
	track := tool.Func("track_order", "Tells where a shipped order is.",
		func(ctx context.Context, in OrderArgs) (string, error) {
			return "", ErrCarrierDown // the model sees the error's text as the output
		})
	return []pipeline.Tool{cancel, track}
}

func run(ctx context.Context, w io.Writer) error {
	agent := &pipeline.Agent{
		Name:         "support",
		Instructions: "You help customers with their orders. Use the tools.",
		Model: exmodel.Pick( // OpenAI with OPENAI_API_KEY, this script without
			scripted.Respond(
				scripted.Call("track_order", `{"order":"A-17"}`),
				scripted.Call("cancel_order", `{"order":"B-4"}`),
			),
			scripted.Reply("Order B-4 is cancelled. I cannot track A-17 right now: the carrier's service is down."),
		),
		Settings: exmodel.Settings(),
		Tools:    tools(w),
	}
	runner := pipeline.NewRunner()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("Where is order A-17? And please cancel B-4."),
		pipeline.WithRunID("first-1"))
	if err != nil {
		return err
	}
	for _, it := range res.NewItems() {
		fmt.Fprintf(w, "%d %s %s %s\n", it.Seq(), it.Kind(), it.Name(), it.Text())
	}
	fmt.Fprintln(w, "final output:", res.FinalOutput())
	return nil
}
