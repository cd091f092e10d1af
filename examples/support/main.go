// Command support is a customer-support assistant: a triage agent that
// classifies each message into a typed struct and, in the same model call,
// hands off to refunds (with typed arguments) or to an FAQ agent; a refund
// tool behind a human approval decided in another process; a per-user
// session in SQLite; an input guardrail that keeps card numbers out of
// the session; and FAQ answers read from an MCP server.
//
//	(cd tool/mcp/testdata/everything && npm ci)   # once
//	go run ./examples/support
//
// The approval is decided by a second process: this program starts itself
// again with -approve, which loads the paused run from the SQLite file,
// approves it and resumes it. It runs offline on a scripted model that
// answers per agent; node must be on PATH.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
	"github.com/turnkit/turnkit/tool/mcp"
)

const defaultServer = "tool/mcp/testdata/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// childEnv marks the approver process, started by the assistant itself.
const childEnv = "TURNKIT_SUPPORT_APPROVER"

// Triage is the triage agent's classification of a message.
type Triage struct {
	Category string `json:"category" jsonschema:"enum=refund,enum=faq"`
	Summary  string `json:"summary"`
}

// Refund is what a transfer to the refunds agent carries.
type Refund struct {
	Order  string `json:"order" jsonschema:"pattern=^[A-Z][0-9]+$"`
	Amount int    `json:"amount" jsonschema:"minimum=1,maximum=500"`
}

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "support:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("support", flag.ContinueOnError)
	fs.SetOutput(w)
	db := fs.String("db", filepath.Join(os.TempDir(), "turnkit-support.db"), "SQLite file of the sessions and checkpoints")
	server := fs.String("server", defaultServer, "the MCP reference server's dist/index.js")
	approve := fs.String("approve", "", "approve the paused run with this ID and resume it (the approver process)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, err := sqlite.Open(*db) // sessions and checkpoints (a state.Store) in one file
	if err != nil {
		return err
	}
	defer store.Close()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(store),
		approval.Require(approval.ByTool("refund")),
		guardrails.Input(noCards, guardrails.DropBlockedInput()),
	))
	if *approve != "" {
		// The approver never reaches the FAQ agent: it starts no MCP server.
		return approveRefund(ctx, w, store, runner, newTriage(w, nil), *approve)
	}

	node, err := exec.LookPath("node")
	if err != nil {
		return errors.New("node is not on PATH; the FAQ agent reads its answers through the MCP reference server")
	}
	ts, err := mcp.Connect(ctx, []mcp.Server{{
		Name: "docs", Command: &mcp.Command{Path: node, Args: []string{*server, "stdio"}}, Allow: []string{"echo"},
	}})
	if err != nil {
		return err
	}
	defer ts.Close()
	triage := newTriage(w, ts.Tools())

	const user = "alice"
	sid := "user-" + user
	messages := []string{
		"I want a refund for order A1: the kettle arrived broken.",
		"Charge my card 4111 1111 1111 1111 again instead.",
		"What is your returns policy?",
	}
	if err := store.Clear(ctx, sid); err != nil { // a fresh conversation each time the example runs
		return err
	}
	for i, msg := range messages {
		runID := fmt.Sprintf("%s-%d", user, i+1)
		if err := store.Delete(ctx, runID); err != nil { // and fresh checkpoints
			return err
		}
		fmt.Fprintf(w, "%s> %s\n", user, msg)
		res, err := runner.Run(ctx, triage, pipeline.UserInput(msg), pipeline.WithSessionID(sid), pipeline.WithRunID(runID))
		if tw, ok := errors.AsType[*guardrails.TripwireError](err); ok {
			fmt.Fprintf(w, "  blocked by guardrail %q: %v\n", tw.Guardrail, tw.Info)
			continue
		}
		if err != nil {
			return err
		}
		st := res.State()
		if c, err := pipeline.HandoffOutputAs[Triage](triage, st, "triage"); err == nil {
			fmt.Fprintf(w, "  triage: %s (%s) -> %s\n", c.Category, c.Summary, res.LastAgent().Name)
		}
		if res.Interrupted() {
			if err := store.Save(ctx, st); err != nil {
				return err
			}
			for _, p := range res.Interruptions() {
				fmt.Fprintf(w, "  waiting for approval: %s %s\n", p.Tool, p.Arguments)
			}
			if err := approver(ctx, w, *db, runID); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", res.LastAgent().Name, res.FinalOutput())
	}

	items, err := store.List(ctx, sid, 0)
	if err != nil {
		return err
	}
	cards := 0
	for _, it := range items {
		if cardNumber.MatchString(it.Text()) {
			cards++
		}
	}
	fmt.Fprintf(w, "session %s: %d items, %d with a card number\n", sid, len(items), cards)
	return nil
}

// approver starts this program again as the approver of run runID, and
// copies its output, indented.
func approver(ctx context.Context, w io.Writer, db, runID string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, exe, "-db", db, "-approve", runID)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	for line := range strings.Lines(string(out)) {
		fmt.Fprintf(w, "  [approver pid %d] %s", cmd.Process.Pid, line)
	}
	if err != nil {
		return fmt.Errorf("approver of run %s: %w", runID, err)
	}
	return nil
}

// approveRefund is the approver: it loads the paused run, approves its
// refund and resumes it; approval.Resume claims the checkpoint first, so
// two approvers cannot both pay.
func approveRefund(ctx context.Context, w io.Writer, store *sqlite.Store, runner *pipeline.Runner, triage *pipeline.Agent, runID string) error {
	st, err := store.Load(ctx, runID)
	if err != nil {
		return err
	}
	// The handoff's arguments and the triage travel in the checkpoint.
	r, err := pipeline.HandoffInputAs[Refund](triage, st, "refunds")
	if err != nil {
		return err
	}
	c, err := pipeline.HandoffOutputAs[Triage](triage, st, "triage")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "checkpoint %s: %s (%s), order %s, %d EUR\n", runID, c.Category, c.Summary, r.Order, r.Amount)
	for _, p := range st.Pending() {
		if err := st.Approve(p.CallID); err != nil {
			return err
		}
		fmt.Fprintf(w, "approved %s %s\n", p.Tool, p.Arguments)
	}
	res, err := approval.Resume(ctx, store, runner, triage, st)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s\n", res.LastAgent().Name, res.FinalOutput())
	return nil
}

var cardNumber = regexp.MustCompile(`\b(?:\d[ -]?){13,16}\b`)

// noCards trips on a card number in the input.
func noCards(ctx context.Context, _ *pipeline.Agent, items []state.Item) (guardrails.Verdict, error) {
	for _, it := range items {
		if cardNumber.MatchString(it.Text()) {
			return guardrails.Trip("card number"), nil
		}
	}
	return guardrails.Pass(nil), nil
}

// newTriage returns the triage agent and the agents it hands off to; the
// FAQ agent's tools come from the MCP server (nil in the approver).
func newTriage(w io.Writer, docs []pipeline.Tool) *pipeline.Agent {
	refund := tool.Func("refund", "Refunds an order.", func(ctx context.Context, r Refund) (string, error) {
		return fmt.Sprintf("refunded %d EUR on order %s", r.Amount, r.Order), nil
	})
	m := model()
	refunds := &pipeline.Agent{Name: "refunds", Model: m, Tools: []pipeline.Tool{refund},
		Instructions: "Refund what the customer is owed with the refund tool."}
	faq := &pipeline.Agent{Name: "faq", Model: m, Tools: docs,
		Instructions: "Answer from the documentation the docs tools return."}
	toRefunds := tool.Handoff(refunds, func(ctx context.Context, r Refund) error {
		fmt.Fprintf(w, "  handoff to refunds: order %s, %d EUR\n", r.Order, r.Amount)
		return nil
	})
	return &pipeline.Agent{
		Name: "triage", Model: m, Output: tool.MustOutput[Triage](),
		Instructions: "Classify the message, then hand off: refunds with the order and amount, or faq.",
		Handoffs:     []pipeline.Handoff{toRefunds, {Agent: faq}},
	}
}

// model stands in for a real model: one scripted model answers every
// agent, by agent and by what it was given, in any process.
func model() pipeline.Model {
	return scripted.Rules(
		scripted.On(scripted.All(scripted.ForAgent("triage"), scripted.LastUserContains("refund")), scripted.Respond(
			scripted.Text(`{"category":"refund","summary":"broken kettle"}`),
			scripted.Call("transfer_to_refunds", `{"order":"A1","amount":20}`))),
		scripted.On(scripted.ForAgent("triage"), scripted.Respond(
			scripted.Text(`{"category":"faq","summary":"returns policy"}`),
			scripted.Call("transfer_to_faq", `{}`))),
		scripted.On(scripted.All(scripted.ForAgent("refunds"), scripted.AfterOutput("refunded")),
			scripted.Reply("Your refund of 20 EUR for order A1 is on its way.")),
		scripted.On(scripted.ForAgent("refunds"), scripted.CallTool("refund", `{"order":"A1","amount":20}`)),
		scripted.On(scripted.All(scripted.ForAgent("faq"), scripted.AfterOutput("Echo:")),
			scripted.Reply("You can return any item within 30 days; refunds take 5 days.")),
		scripted.On(scripted.ForAgent("faq"), scripted.CallTool("echo", `{"message":"returns policy: 30 days"}`)),
	)
}
