package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

type invoiceLine struct {
	Item string `json:"item"`
	Qty  int    `json:"qty" jsonschema:"minimum=1"`
}

type invoice struct {
	Customer string        `json:"customer"`
	Lines    []invoiceLine `json:"lines"`
	Note     *string       `json:"note"`
}

type refund struct {
	Reason string `json:"reason"`
}

var (
	invoiceOutput = tool.MustOutput[invoice]()
	refundOutput  = tool.MustOutput[refund]()
)

const invoiceJSON = `{"customer":"ACME","lines":[{"item":"bolt","qty":3},{"item":"nut","qty":5}],"note":null}`

var wantInvoice = invoice{Customer: "ACME", Lines: []invoiceLine{{"bolt", 3}, {"nut", 5}}}

// runOut runs (or streams) agent on "bill ACME" and returns the result and
// the run's error; streamed, the result comes with RunCompleted or, on
// error, from the state the run recorded into.
func runOut(t *testing.T, r *pipeline.Runner, agent *pipeline.Agent, stream bool) (*pipeline.Result, error) {
	t.Helper()
	in := pipeline.UserInput("bill ACME")
	if !stream {
		return r.Run(context.Background(), agent, in)
	}
	for ev, err := range r.Stream(context.Background(), agent, in) {
		if err != nil {
			return nil, err
		}
		if done, ok := ev.(pipeline.RunCompleted); ok {
			return done.Result, nil
		}
	}
	t.Fatal("stream ended without RunCompleted")
	return nil, nil
}

func modes(t *testing.T, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			f(t, stream)
		})
	}
}

func TestOutputFinalMessage(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, stream bool) {
		var sent pipeline.OutputSpec
		spy := pipeline.Middleware{Model: func(next pipeline.Model) pipeline.Model {
			return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				sent = c.Output
				return next.Respond(ctx, c)
			})
		}}
		agent := &pipeline.Agent{Name: "billing", Model: scripted.New(scripted.Reply(invoiceJSON)), Output: invoiceOutput}
		res, err := runOut(t, pipeline.NewRunner(pipeline.WithMiddleware(spy)), agent, stream)
		if err != nil {
			t.Fatal(err)
		}
		if sent.Name != "invoice" || !sent.Strict || !strings.Contains(string(sent.Schema), `"required":["customer","lines","note"]`) {
			t.Errorf("model call output spec = %+v %s", sent, sent.Schema)
		}
		got, err := pipeline.OutputAs[invoice](res)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantInvoice, got); d != "" {
			t.Errorf("OutputAs (-want +got):\n%s", d)
		}
		if res.FinalOutput() != invoiceJSON {
			t.Errorf("FinalOutput = %q, want the raw text", res.FinalOutput())
		}
		var te *pipeline.OutputTypeError
		if _, err := pipeline.OutputAs[refund](res); !errors.As(err, &te) || te.Agent != "billing" || te.Want != "pipeline_test.refund" || te.Got != "pipeline_test.invoice" {
			t.Errorf("OutputAs[refund] error = %v, want an OutputTypeError naming billing", err)
		}

		// The state keeps the raw text: a checkpoint round trip decodes to
		// the same value.
		st := pipelinetest.RoundTrip(t, res.State())
		again, err := pipeline.DecodeOutput[invoice](agent, st)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(got, again); d != "" {
			t.Errorf("DecodeOutput after a round trip (-live +decoded):\n%s", d)
		}
	})
}

func TestOutputTextAgent(t *testing.T) {
	t.Parallel()
	agent := &pipeline.Agent{Name: "chat", Model: scripted.New(scripted.Reply("hi"))}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := pipeline.OutputAs[string](res); err != nil || s != "hi" {
		t.Errorf("OutputAs[string] = %q, %v", s, err)
	}
	var te *pipeline.OutputTypeError
	if _, err := pipeline.OutputAs[invoice](res); !errors.As(err, &te) || te.Got != "text" {
		t.Errorf("OutputAs[invoice] on a text agent: %v", err)
	}
}

func TestOutputErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		step   scripted.Step
		check  func(t *testing.T, err error)
		target error
	}{
		{
			name: "invalid JSON", step: scripted.Reply(`{"customer":"ACME",`), target: pipeline.ErrInvalidOutput,
			check: func(t *testing.T, err error) {
				var oe *pipeline.OutputError
				if !errors.As(err, &oe) || oe.Raw != `{"customer":"ACME",` || oe.Offset == 0 || oe.Agent != "billing" {
					t.Errorf("error = %#v, want an OutputError with the raw text and an offset", err)
				}
			},
		},
		{
			name: "schema mismatch", step: scripted.Reply(`{"customer":"ACME","lines":[{"item":"bolt","qty":3},{"item":"nut","qty":0}],"note":null}`),
			target: pipeline.ErrInvalidOutput,
			check: func(t *testing.T, err error) {
				var oe *pipeline.OutputError
				if !errors.As(err, &oe) || oe.Path != "lines[1].qty" || !strings.Contains(oe.Raw, `"qty":0`) {
					t.Errorf("error = %v, want an OutputError at lines[1].qty", err)
				}
			},
		},
		{
			name: "missing property", step: scripted.Reply(`{"customer":"ACME","lines":[]}`), target: pipeline.ErrInvalidOutput,
			check: func(t *testing.T, err error) {
				var oe *pipeline.OutputError
				if !errors.As(err, &oe) || oe.Path != "note" {
					t.Errorf("error = %v, want an OutputError at note", err)
				}
			},
		},
		{
			name: "refusal", step: scripted.Respond(scripted.Refuse("I can't help with that.")), target: pipeline.ErrRefused,
			check: func(t *testing.T, err error) {
				var re *pipeline.RefusalError
				if !errors.As(err, &re) || re.Refusal != "I can't help with that." || re.Agent != "billing" {
					t.Errorf("error = %v, want a RefusalError", err)
				}
				if errors.Is(err, pipeline.ErrInvalidOutput) {
					t.Error("a refusal is reported as a decode failure")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			modes(t, func(t *testing.T, stream bool) {
				agent := &pipeline.Agent{Name: "billing", Model: scripted.New(tt.step), Output: invoiceOutput}
				run := state.NewRun("run_1", "")
				r := pipeline.NewRunner()
				var err error
				var res *pipeline.Result
				if stream {
					for _, e := range r.Stream(context.Background(), agent, pipeline.UserInput("bill"), pipeline.WithState(run)) {
						if e != nil {
							err = e
						}
					}
				} else {
					res, err = r.Run(context.Background(), agent, pipeline.UserInput("bill"), pipeline.WithState(run))
				}
				if !errors.Is(err, tt.target) {
					t.Fatalf("err = %v, want %v", err, tt.target)
				}
				tt.check(t, err)
				if _, done := run.FinalOutput(); done {
					t.Error("the run finished on an output it could not decode")
				}
				if res != nil {
					if _, aerr := pipeline.OutputAs[invoice](res); aerr == nil || !errors.Is(err, aerr) {
						t.Errorf("OutputAs error = %v, want the run's error %v", aerr, err)
					}
				}
			})
		})
	}
}

func TestOutputTerminalTool(t *testing.T) {
	t.Parallel()
	lookup := tool.Func("lookup_invoice", "Look an invoice up.", func(ctx context.Context, in struct {
		Customer string `json:"customer"`
	}) (invoice, error) {
		return invoice{Customer: in.Customer}, nil // a nil Lines marshals as null
	})
	decider := pipeline.DecideToolUse(func(ctx context.Context, t *pipeline.Turn, outs []pipeline.ToolOutcome) (string, bool, error) {
		return outs[0].Result.Output, true, nil
	})
	behaviours := map[string]pipeline.ToolUseBehavior{
		"first": pipeline.StopOnFirstTool(), "at": pipeline.StopAtTools("lookup_invoice"), "decider": decider,
	}
	for name, use := range behaviours {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			modes(t, func(t *testing.T, stream bool) {
				agent := &pipeline.Agent{
					Name: "billing", Output: invoiceOutput, Tools: []pipeline.Tool{lookup}, ToolUse: use,
					Model: scripted.New(scripted.CallTool("lookup_invoice", `{"customer":"ACME"}`)),
				}
				res, err := runOut(t, pipeline.NewRunner(), agent, stream)
				if err != nil {
					t.Fatal(err)
				}
				got, err := pipeline.OutputAs[invoice](res)
				if err != nil || got.Customer != "ACME" {
					t.Errorf("OutputAs = %+v, %v", got, err)
				}
			})
		})
	}
}

func TestOutputTerminalToolTypeCheckedBeforeRun(t *testing.T) {
	t.Parallel()
	refunder := tool.Func("refund", "Refund.", func(ctx context.Context, in struct{}) (refund, error) { return refund{}, nil })
	m := scripted.New(scripted.Reply(invoiceJSON))
	agent := &pipeline.Agent{
		Name: "billing", Model: m, Output: invoiceOutput,
		Tools: []pipeline.Tool{refunder}, ToolUse: pipeline.StopAtTools("refund"),
	}
	triage := &pipeline.Agent{Name: "triage", Model: m, Handoffs: []pipeline.Handoff{{Agent: agent}}}
	for _, a := range []*pipeline.Agent{agent, triage} {
		var te *pipeline.OutputTypeError
		if err := a.Validate(); !errors.As(err, &te) || te.Agent != "billing" || te.Tool != "refund" {
			t.Errorf("Validate(%s) = %v, want an OutputTypeError naming billing and refund", a.Name, err)
		}
		if _, err := pipeline.NewRunner().Run(context.Background(), a, pipeline.UserInput("x")); !errors.Is(err, pipeline.ErrOutputType) {
			t.Errorf("Run(%s) = %v, want ErrOutputType", a.Name, err)
		}
	}
	if n := len(m.Calls()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	// A tool that is not terminal, or returns raw JSON text, is fine.
	agent.ToolUse = pipeline.RunAgain()
	if err := agent.Validate(); err != nil {
		t.Error(err)
	}
	agent.ToolUse = pipeline.StopOnFirstTool()
	agent.Tools = []pipeline.Tool{tool.Func("raw", "Raw.", func(ctx context.Context, in struct{}) (string, error) { return invoiceJSON, nil })}
	if err := agent.Validate(); err != nil {
		t.Error(err)
	}
}

// TestOutputHandoff: each agent has its own output type; the result's is
// that of the agent that produced the final output.
func TestOutputHandoff(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, stream bool) {
		refunds := &pipeline.Agent{Name: "refunds", Model: scripted.New(scripted.Reply(`{"reason":"damaged"}`)), Output: refundOutput}
		billing := &pipeline.Agent{
			Name: "billing", Output: invoiceOutput, Handoffs: []pipeline.Handoff{{Agent: refunds}},
			Model: scripted.New(scripted.CallTool(pipeline.HandoffToolName("refunds"), `{}`)),
		}
		res, err := runOut(t, pipeline.NewRunner(), billing, stream)
		if err != nil {
			t.Fatal(err)
		}
		var te *pipeline.OutputTypeError
		if _, err := pipeline.OutputAs[invoice](res); !errors.As(err, &te) || te.Agent != "refunds" {
			t.Errorf("OutputAs[invoice] = %v, want an OutputTypeError naming refunds", err)
		} else if !strings.Contains(err.Error(), `"refunds"`) {
			t.Errorf("error %q does not name the agent", err)
		}
		if got, err := pipeline.OutputAs[refund](res); err != nil || got.Reason != "damaged" {
			t.Errorf("OutputAs[refund] = %+v, %v", got, err)
		}
		if got, err := pipeline.DecodeOutput[refund](billing, pipelinetest.RoundTrip(t, res.State())); err != nil || got.Reason != "damaged" {
			t.Errorf("DecodeOutput[refund] = %+v, %v", got, err)
		}
	})
}

// TestOutputResumeRoundTrip pauses for an approval, round-trips the state
// through JSON and resumes: the typed value is the one of a live resume.
func TestOutputResumeRoundTrip(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, stream bool) {
		var values []invoice
		for _, serialized := range []bool{false, true} {
			c := &calls{}
			agent := &pipeline.Agent{
				Name: "billing", Output: invoiceOutput, Tools: []pipeline.Tool{c.tool("danger")},
				Model: scripted.New(scripted.CallTool("danger", `{}`), scripted.Reply(invoiceJSON)),
			}
			r := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("danger"))))
			first := start(t, r, agent, stream)
			if _, err := pipeline.OutputAs[invoice](first); !errors.Is(err, pipeline.ErrNoFinalOutput) {
				t.Errorf("OutputAs on a paused run = %v, want ErrNoFinalOutput", err)
			}
			st := first.State()
			if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
				t.Fatal(err)
			}
			if serialized {
				st = pipelinetest.RoundTrip(t, st)
			}
			res := resume(t, r, agent, st, stream)
			v, err := pipeline.OutputAs[invoice](res)
			if err != nil {
				t.Fatal(err)
			}
			values = append(values, v)
		}
		if d := cmp.Diff(values[0], values[1]); d != "" {
			t.Errorf("live and serialized resumes differ (-live +serialized):\n%s", d)
		}
	})
}

// TestOutputGuardrailSeesValue: an output guardrail gets the typed value as
// well as the text, and can trip on it.
func TestOutputGuardrailSeesValue(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, stream bool) {
		var seen []string
		check := guardrails.Typed(func(ctx context.Context, a *pipeline.Agent, inv invoice, text string) (guardrails.Verdict, error) {
			seen = append(seen, fmt.Sprintf("%s %d %v", inv.Customer, len(inv.Lines), text == invoiceJSON))
			if len(inv.Lines) > 1 {
				return guardrails.Trip("too many lines"), nil
			}
			return guardrails.Verdict{}, nil
		})
		agent := &pipeline.Agent{Name: "billing", Model: scripted.New(scripted.Reply(invoiceJSON)), Output: invoiceOutput}
		_, err := runOut(t, pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Output(check))), agent, stream)
		if !errors.Is(err, pipeline.ErrOutputRejected) {
			t.Errorf("err = %v, want an output tripwire", err)
		}
		if d := cmp.Diff([]string{"ACME 2 true"}, seen); d != "" {
			t.Errorf("the check saw (-want +got):\n%s", d)
		}
	})
}

// sharedOutputError is an output type whose Decode returns one shared
// *OutputError, without agent or raw text, for every text.
type sharedOutputError struct{ err *pipeline.OutputError }

func (o sharedOutputError) OutputSpec() pipeline.OutputSpec {
	return pipeline.OutputSpec{Name: "shared", Schema: []byte(`{"type":"object"}`)}
}

func (o sharedOutputError) Decode(string) (any, error) { return nil, o.err }

// TestSharedOutputErrorIsNotEdited runs two agents at once whose output
// type returns one shared *OutputError. The core fills in the agent and
// the raw text on a copy: the shared value stays as the output type made
// it (editing it in place is a data race that -race reports), and each
// run's error names its own agent and text.
func TestSharedOutputErrorIsNotEdited(t *testing.T) {
	shared := &pipeline.OutputError{Path: "$", Err: errors.New("not an object")}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			name, text := fmt.Sprintf("agent%d", i), fmt.Sprintf("text %d", i)
			agent := &pipeline.Agent{Name: name, Output: sharedOutputError{shared}, Model: scripted.New(scripted.Reply(text))}
			_, errs[i] = pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("go"))
		})
	}
	wg.Wait()
	if shared.Agent != "" || shared.Raw != "" {
		t.Errorf("shared error edited: agent %q raw %q, want both empty", shared.Agent, shared.Raw)
	}
	for i, err := range errs {
		oe, ok := errors.AsType[*pipeline.OutputError](err)
		if want := fmt.Sprintf("agent%d", i); !ok || oe.Agent != want || oe.Raw != fmt.Sprintf("text %d", i) || oe.Path != "$" {
			t.Errorf("run %d: error %v, want an *OutputError of %s with its own text", i, err, want)
		}
	}
}
