// Extract pulls a typed record out of an email: the agent declares the Go
// type of its final output, the model is asked for JSON that follows the
// type's strict schema, and the run's final output is decoded and
// validated into the type. A typed output guardrail checks the value, and
// the run is streamed: text deltas flow as usual, and the typed value
// arrives with RunCompleted.
//
// It runs offline on the scripted model, and on OpenAI when OPENAI_API_KEY
// is set:
//
//	go run ./examples/extract
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "extract:", err)
		os.Exit(1)
	}
}

// Order is what the agent extracts: its JSON schema, generated from the
// type and its tags, is what the model must follow.
type Order struct {
	Customer string `json:"customer" jsonschema:"description=The customer's full name"`
	Email    string `json:"email" jsonschema:"pattern=^[^@ ]+@[^@ ]+$"`
	Lines    []Line `json:"lines" jsonschema:"minItems=1"`
	// Deliver is the requested delivery date (YYYY-MM-DD), if any: a
	// pointer is an optional field, sent as nullable in strict mode.
	Deliver *string `json:"deliver" jsonschema:"description=Requested delivery date as YYYY-MM-DD"`
	Urgency string  `json:"urgency" jsonschema:"enum=low,enum=normal,enum=high"`
}

// Line is one ordered product.
type Line struct {
	Product  string `json:"product"`
	Quantity int    `json:"quantity" jsonschema:"minimum=1"`
}

const email = `From: Ada Lovelace <ada@example.com>
Subject: order

Hello, please send 3 boxes of M4 bolts and 1 torque wrench.
We need them by 2026-03-14 at the latest, the line is down. Thanks, Ada`

// orderOutput is the agent's output type, built once. tool.Output refuses a
// type that strict mode cannot describe (a map, an interface), naming the
// field, unless tool.AllowNonStrict is given.
var orderOutput = tool.MustOutput[Order](tool.OutputDescription("An order extracted from an email."))

func newModel() pipeline.Model {
	return exmodel.Pick(scripted.Reply(`{"customer":"Ada Lovelace","email":"ada@example.com",` +
		`"lines":[{"product":"M4 bolts (box)","quantity":3},{"product":"torque wrench","quantity":1}],` +
		`"deliver":"2026-03-14","urgency":"high"}`))
}

func run(ctx context.Context, w io.Writer) error {
	agent := &pipeline.Agent{
		Name:         "extractor",
		Instructions: "Extract the order from the email. Use null for a field the email does not give.",
		Model:        newModel(),
		Settings:     exmodel.Settings(),
		Output:       orderOutput,
	}
	// An output guardrail sees the typed value as well as the text.
	sane := guardrails.Typed(func(ctx context.Context, a *pipeline.Agent, o Order, text string) (guardrails.Verdict, error) {
		for _, l := range o.Lines {
			if l.Quantity > 1000 {
				return guardrails.Trip(fmt.Sprintf("%d × %s looks like a typo", l.Quantity, l.Product)), nil
			}
		}
		return guardrails.Pass(map[string]int{"lines": len(o.Lines)}), nil
	})
	runner := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Output(sane, guardrails.WithName("sane_quantities"))))

	var res *pipeline.Result
	deltas := 0
	for ev, err := range runner.Stream(ctx, agent, pipeline.UserInput(email)) {
		var refused *pipeline.RefusalError
		switch {
		case errors.As(err, &refused):
			return fmt.Errorf("the model declined: %s", refused.Refusal)
		case err != nil:
			return err // an *pipeline.OutputError says where the JSON went wrong
		}
		switch ev := ev.(type) {
		case pipeline.TextDelta:
			deltas++
		case pipeline.RunCompleted:
			res = ev.Result
		}
	}
	order, err := pipeline.OutputAs[Order](res)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "streamed %d text deltas\n", deltas)
	fmt.Fprintf(w, "customer: %s <%s>\n", order.Customer, order.Email)
	for _, l := range order.Lines {
		fmt.Fprintf(w, "  %d × %s\n", l.Quantity, l.Product)
	}
	if order.Deliver != nil {
		fmt.Fprintln(w, "deliver by:", *order.Deliver)
	}
	fmt.Fprintln(w, "urgency:", order.Urgency)

	// The state keeps the raw final text: a checkpoint decodes to the same
	// value in another process.
	data, err := state.Marshal(res.State())
	if err != nil {
		return err
	}
	st, err := state.Unmarshal(data)
	if err != nil {
		return err
	}
	again, err := pipeline.DecodeOutput[Order](agent, st)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "from the checkpoint (%d bytes): %d lines for %s\n", len(data), len(again.Lines), again.Customer)
	return nil
}
