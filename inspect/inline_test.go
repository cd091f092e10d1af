package inspect_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/inspect"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
	"github.com/turnkit/turnkit/tool"
)

// TestTimelineShowsVerdictsDecisionsUsage: a session's timeline shows,
// inline at their places, each model call's usage, the input guardrail's
// verdict and the human's decision on a call, all escaped.
func TestTimelineShowsVerdictsDecisionsUsage(t *testing.T) {
	ctx := context.Background()
	sessions, runs := memory.New(), memstore.New()
	cp := checkpoint.New(runs, checkpoint.WithSession(sessions))
	pass := func(context.Context, *pipeline.Agent, []state.Item) (guardrails.Verdict, error) {
		return guardrails.Pass(nil), nil
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware(),
		approval.Require(approval.ByTool("refund")), guardrails.Input(pass, guardrails.WithName("no_cards"))))
	refund := tool.Func("refund", "Refunds.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil })
	agent := &pipeline.Agent{Name: "support", Tools: []pipeline.Tool{refund},
		Model: scripted.Rules(scripted.On(scripted.AfterOutput(""), scripted.Reply("Done.")), scripted.On(scripted.Any(), scripted.CallTool("refund", `{}`)))}
	res, err := runner.Run(ctx, agent, pipeline.UserInput("refund me"), pipeline.WithSessionID("s1"), pipeline.WithRunID("r1"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("run = %v; want a pause", err)
	}
	run := res.State()
	if err := run.Reject(res.Interruptions()[0].CallID, hostileText); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Resume(ctx, agent, run); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(inspect.New(sessions, runs))
	defer srv.Close()
	_, body := get(t, srv.Client(), srv, "/session?id="+url.QueryEscape("s1"))
	for _, want := range []string{
		`class="note guardrail">guardrail no_cards (input, turn 1): passed`,
		`class="note usage">model call, turn 1, agent support`,
		`class="note usage">model call, turn 2, agent support`,
		`class="note decision">decision on refund: rejected: &lt;script&gt;`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, body)
		}
	}
	if m := unsafe.FindString(body); m != "" {
		t.Errorf("unescaped markup %q in the timeline", m)
	}
}
