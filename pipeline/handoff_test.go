package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

type triageOut struct {
	Category string `json:"category" jsonschema:"enum=refund,enum=faq"`
	Urgent   bool   `json:"urgent"`
}

type refundIn struct {
	Order  string `json:"order"`
	Amount int    `json:"amount" jsonschema:"minimum=1"`
}

// handoffAgents returns a triage agent with a typed output that hands off
// to refunds with a typed input, the refunds agent, and the inputs the
// handoff callback saw.
func handoffAgents(triage scripted.Step, more ...scripted.Step) (*pipeline.Agent, *pipeline.Agent, *[]refundIn) {
	var mu sync.Mutex
	seen := new([]refundIn)
	refunds := &pipeline.Agent{Name: "refunds", Model: scripted.New(scripted.Reply("Refunded."))}
	h := tool.Handoff(refunds, func(ctx context.Context, in refundIn) error {
		mu.Lock()
		defer mu.Unlock()
		*seen = append(*seen, in)
		return nil
	})
	a := &pipeline.Agent{Name: "triage", Output: tool.MustOutput[triageOut](),
		Model: scripted.New(append([]scripted.Step{triage}, more...)...), Handoffs: []pipeline.Handoff{h}}
	return a, refunds, seen
}

// TestHandoffTyped: one model call classifies (the triage output) and
// hands off with arguments; both are recorded and read back typed, live
// and after a checkpoint round trip.
func TestHandoffTyped(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, stream bool) {
		triage, _, seen := handoffAgents(scripted.Respond(
			scripted.Text(`{"category":"refund","urgent":true}`),
			scripted.Call("transfer_to_refunds", `{"order":"A1","amount":20}`)))
		res, err := runOut(t, pipeline.NewRunner(), triage, stream)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := pipeline.OutputAs[string](res); err != nil || got != "Refunded." {
			t.Errorf("OutputAs[string] = %q, %v; want the refunds agent's answer", got, err)
		}
		want := refundIn{Order: "A1", Amount: 20}
		if !cmp.Equal(*seen, []refundIn{want}) {
			t.Errorf("OnHandoff saw %+v, want one %+v", *seen, want)
		}
		data, err := state.Marshal(res.State())
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := state.Unmarshal(data)
		if err != nil {
			t.Fatal(err)
		}
		for name, st := range map[string]*state.Run{"live": res.State(), "checkpoint": decoded} {
			in, err := pipeline.HandoffInputAs[refundIn](triage, st, "refunds")
			if err != nil || in != want {
				t.Errorf("%s: HandoffInputAs = %+v, %v; want %+v", name, in, err, want)
			}
			out, err := pipeline.HandoffOutputAs[triageOut](triage, st, "triage")
			if err != nil || out != (triageOut{Category: "refund", Urgent: true}) {
				t.Errorf("%s: HandoffOutputAs = %+v, %v; want the classification", name, out, err)
			}
			if _, err := pipeline.HandoffInputAs[triageOut](triage, st, "refunds"); !errors.Is(err, pipeline.ErrOutputType) {
				t.Errorf("%s: HandoffInputAs of the wrong type: %v, want ErrOutputType", name, err)
			}
			if _, err := pipeline.HandoffInputAs[refundIn](triage, st, "faq"); !errors.Is(err, pipeline.ErrNoHandoff) {
				t.Errorf("%s: HandoffInputAs to an agent never handed to: %v, want ErrNoHandoff", name, err)
			}
			recs, err := pipeline.Handoffs(st)
			if err != nil || len(recs) != 1 || recs[0].From != "triage" || recs[0].To != "refunds" || !recs[0].HasOutput {
				t.Errorf("%s: Handoffs = %+v, %v; want one triage → refunds with output", name, recs, err)
			}
		}
	})
}

// TestHandoffInputSchema: the transfer function the model sees takes the
// handoff's input type.
func TestHandoffInputSchema(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply(`{"category":"faq","urgent":false}`))
	refunds := &pipeline.Agent{Name: "refunds", Model: scripted.New()}
	triage := &pipeline.Agent{Name: "triage", Model: m, Output: tool.MustOutput[triageOut](),
		Handoffs: []pipeline.Handoff{tool.Handoff[refundIn](refunds, nil)}}
	var sent []pipeline.ToolSpec
	spy := pipeline.Middleware{Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			sent = c.Tools
			return next.Respond(ctx, c)
		})
	}}
	if _, err := pipeline.NewRunner(pipeline.WithMiddleware(spy)).Run(context.Background(), triage, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0].Name != "transfer_to_refunds" || !sent[0].Strict ||
		!strings.Contains(string(sent[0].Parameters), `"order"`) || !strings.Contains(string(sent[0].Parameters), `"minimum":1`) {
		t.Errorf("tools sent = %+v, want transfer_to_refunds with the refundIn schema, strict", sent)
	}
}

// TestHandoffBadInput: arguments that do not match the input type are an
// *ArgumentError that ends the run by default, before any tool, the
// callback or the target runs; with WithInvalidCallsToModel the model
// sees it as the call's output and answers again.
func TestHandoffBadInput(t *testing.T) {
	t.Parallel()
	bad := scripted.Respond(scripted.Call("transfer_to_refunds", `{"order":"A1","amount":0}`))
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		triage, refunds, seen := handoffAgents(bad)
		_, err := pipeline.NewRunner().Run(context.Background(), triage, pipeline.UserInput("refund A1"))
		ae, ok := errors.AsType[*pipeline.ArgumentError](err)
		if !ok || ae.Tool != "transfer_to_refunds" || ae.Path != "amount" || ae.CallID == "" {
			t.Fatalf("err = %v, want an *ArgumentError of transfer_to_refunds at amount", err)
		}
		if len(*seen) != 0 || len(refunds.Model.(*scripted.Model).Calls()) != 0 {
			t.Errorf("callback saw %v, refunds called %d times; want neither", *seen, len(refunds.Model.(*scripted.Model).Calls()))
		}
		st, _ := pipeline.StateOf(err)
		if recs, _ := pipeline.Handoffs(st); len(recs) != 0 || st.Agent() != "triage" {
			t.Errorf("state records %+v and agent %q; want no handoff, still triage", recs, st.Agent())
		}
	})
	t.Run("to model", func(t *testing.T) {
		t.Parallel()
		triage, _, seen := handoffAgents(bad, scripted.Respond(
			scripted.Text(`{"category":"refund","urgent":false}`),
			scripted.Call("transfer_to_refunds", `{"order":"A1","amount":5}`)))
		res, err := pipeline.NewRunner(pipeline.WithInvalidCallsToModel()).Run(context.Background(), triage, pipeline.UserInput("refund A1"))
		if err != nil {
			t.Fatal(err)
		}
		second := triage.Model.(*scripted.Model).Calls()[1]
		var told string
		for _, it := range second.Input.All() {
			if it.Kind() == state.KindHandoffOutput {
				told = it.Text()
				break
			}
		}
		if !strings.Contains(told, "amount") || !strings.Contains(told, "transfer_to_refunds") {
			t.Errorf("the model was told %q of its bad handoff, want the argument error", told)
		}
		if !cmp.Equal(*seen, []refundIn{{Order: "A1", Amount: 5}}) || res.LastAgent().Name != "refunds" {
			t.Errorf("callback saw %v, last agent %s; want the corrected handoff taken once", *seen, res.LastAgent().Name)
		}
	})
}

// TestHandoffBadOutput: beside a handoff, a message that does not decode
// into the agent's output type (or refuses) does not stop the handoff:
// the callback gets its error, and HandoffOutputAs returns it, live and
// from a checkpoint.
func TestHandoffBadOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		message scripted.Part
		check   func(err error) bool
	}{
		{"not the type", scripted.Text(`{"category":"shoes","urgent":true}`), func(err error) bool {
			oe, ok := errors.AsType[*pipeline.OutputError](err)
			return ok && oe.Agent == "triage" && oe.Path == "category"
		}},
		{"a preamble", scripted.Text("Let me pass you to refunds."), func(err error) bool {
			return errors.Is(err, pipeline.ErrInvalidOutput)
		}},
		{"a refusal", scripted.Refuse("I can't classify that."), func(err error) bool {
			re, ok := errors.AsType[*pipeline.RefusalError](err)
			return ok && re.Refusal == "I can't classify that."
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			refunds := &pipeline.Agent{Name: "refunds", Model: scripted.New(scripted.Reply("Refunded."))}
			var got *pipeline.HandoffCall
			h := pipeline.Handoff{Agent: refunds, Input: tool.MustInput[refundIn](), OnHandoff: func(ctx context.Context, c *pipeline.HandoffCall) error {
				cp := *c
				got = &cp
				return nil
			}}
			triage := &pipeline.Agent{Name: "triage", Output: tool.MustOutput[triageOut](), Handoffs: []pipeline.Handoff{h},
				Model: scripted.New(scripted.Respond(tc.message, scripted.Call("transfer_to_refunds", `{"order":"A1","amount":20}`)))}
			res, err := pipeline.NewRunner().Run(context.Background(), triage, pipeline.UserInput("refund A1"))
			if err != nil || res.FinalOutput() != "Refunded." {
				t.Fatalf("run: %v, %q; want the handoff taken", err, res.FinalOutput())
			}
			if got == nil || got.Output != nil || !tc.check(got.OutputErr) || got.Input != (refundIn{Order: "A1", Amount: 20}) {
				t.Errorf("OnHandoff got %+v, want the input and the output's error", got)
			}
			data, _ := state.Marshal(res.State())
			decoded, err := state.Unmarshal(data)
			if err != nil {
				t.Fatal(err)
			}
			for name, st := range map[string]*state.Run{"live": res.State(), "checkpoint": decoded} {
				if _, err := pipeline.HandoffOutputAs[triageOut](triage, st, "triage"); !tc.check(err) {
					t.Errorf("%s: HandoffOutputAs: %v, want the output's error", name, err)
				}
			}
		})
	}
}

// TestHandoffCallbackError: a failing callback stops the run with a
// *HandoffError before the target runs; a resume takes the handoff again,
// recorded once.
func TestHandoffCallbackError(t *testing.T) {
	t.Parallel()
	refunds := &pipeline.Agent{Name: "refunds", Model: scripted.New(scripted.Reply("Refunded."))}
	boom := errors.New("ledger down")
	calls := 0
	h := tool.Handoff(refunds, func(ctx context.Context, in refundIn) error {
		calls++
		if calls == 1 {
			return boom
		}
		return nil
	})
	triage := &pipeline.Agent{Name: "triage", Handoffs: []pipeline.Handoff{h},
		Model: scripted.New(scripted.CallTool("transfer_to_refunds", `{"order":"A1","amount":3}`))}
	r := pipeline.NewRunner()
	_, err := r.Run(context.Background(), triage, pipeline.UserInput("refund"))
	he, ok := errors.AsType[*pipeline.HandoffError](err)
	if !ok || !errors.Is(err, boom) || he.From != "triage" || he.To != "refunds" {
		t.Fatalf("err = %v, want a *HandoffError triage → refunds wrapping the callback's", err)
	}
	if n := len(refunds.Model.(*scripted.Model).Calls()); n != 0 {
		t.Fatalf("refunds called %d times before the callback passed", n)
	}
	st, _ := pipeline.StateOf(err)
	res, err := r.Resume(context.Background(), triage, st)
	if err != nil || res.FinalOutput() != "Refunded." || calls != 2 {
		t.Fatalf("resume: %v, output %q, callback calls %d; want Refunded. after a second call", err, res.FinalOutput(), calls)
	}
	if recs, _ := pipeline.Handoffs(res.State()); len(recs) != 1 {
		t.Errorf("records %+v, want the handoff once", recs)
	}
}

// TestHandoffSurvivesResume: a run that hands off with a typed input and
// then pauses for an approval resumes from a checkpoint with the handoff's
// value intact, and the callback does not run again.
func TestHandoffSurvivesResume(t *testing.T) {
	t.Parallel()
	pay := tool.Func("pay_refund", "Pays a refund.", func(ctx context.Context, in refundIn) (string, error) {
		return "paid " + in.Order, nil
	})
	refunds := &pipeline.Agent{Name: "refunds", Tools: []pipeline.Tool{pay}, Model: scripted.Rules(
		scripted.On(scripted.AfterOutput("paid"), scripted.Reply("Refunded.")),
		scripted.On(scripted.Any(), scripted.CallTool("pay_refund", `{"order":"A1","amount":20}`)),
	)}
	calls := 0
	h := tool.Handoff(refunds, func(ctx context.Context, in refundIn) error { calls++; return nil })
	triage := &pipeline.Agent{Name: "triage", Output: tool.MustOutput[triageOut](), Handoffs: []pipeline.Handoff{h},
		Model: scripted.New(scripted.Respond(scripted.Text(`{"category":"refund","urgent":false}`),
			scripted.Call("transfer_to_refunds", `{"order":"A1","amount":20}`)))}
	r := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("pay_refund"))))
	first, err := r.Run(context.Background(), triage, pipeline.UserInput("refund A1"))
	if err != nil || !first.Interrupted() {
		t.Fatalf("run: %v, interrupted %v; want a pause for pay_refund", err, first.Interrupted())
	}
	data, err := state.Marshal(first.State())
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Approve(st.Pending()[0].CallID); err != nil {
		t.Fatal(err)
	}
	res, err := r.Resume(context.Background(), triage, st)
	if err != nil || res.FinalOutput() != "Refunded." {
		t.Fatalf("resume: %v, %q", err, res.FinalOutput())
	}
	if calls != 1 {
		t.Errorf("callback ran %d times, want once", calls)
	}
	in, err := pipeline.HandoffInputAs[refundIn](triage, res.State(), "refunds")
	if err != nil || in != (refundIn{Order: "A1", Amount: 20}) {
		t.Errorf("HandoffInputAs after resume = %+v, %v", in, err)
	}
	if out, err := pipeline.HandoffOutputAs[triageOut](triage, res.State(), "triage"); err != nil || out.Category != "refund" {
		t.Errorf("HandoffOutputAs after resume = %+v, %v", out, err)
	}
}

// TestHandoffCallSeesOutput: OnHandoff gets the answer beside the call
// decoded into the agent's output type, and the input decoded into the
// handoff's.
func TestHandoffCallSeesOutput(t *testing.T) {
	t.Parallel()
	refunds := &pipeline.Agent{Name: "refunds", Model: scripted.New(scripted.Reply("Refunded."))}
	var got pipeline.HandoffCall
	h := pipeline.Handoff{Agent: refunds, Input: tool.MustInput[refundIn](), OnHandoff: func(ctx context.Context, c *pipeline.HandoffCall) error {
		got = *c
		return nil
	}}
	triage := &pipeline.Agent{Name: "triage", Output: tool.MustOutput[triageOut](), Handoffs: []pipeline.Handoff{h},
		Model: scripted.New(scripted.Respond(scripted.Text(`{"category":"refund","urgent":true}`),
			scripted.Call("transfer_to_refunds", `{"order":"A1","amount":20}`)))}
	if _, err := pipeline.NewRunner().Run(context.Background(), triage, pipeline.UserInput("refund A1")); err != nil {
		t.Fatal(err)
	}
	if got.Output != (triageOut{Category: "refund", Urgent: true}) || got.OutputErr != nil ||
		got.Input != (refundIn{Order: "A1", Amount: 20}) || got.From != triage || got.To != refunds || got.CallID == "" {
		t.Errorf("OnHandoff got %+v", got)
	}
}
