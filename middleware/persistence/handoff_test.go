package persistence_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// TestHandoffSavedAfterItWasTaken: the commit of a handoff turn fails, so
// the run records the handoff to replay it once the commit completes; a
// checkpoint saved with the handoff already taken (a save that committed
// while its caller saw a deadline, as a River worker under load did) holds
// both the target agent and the recorded handoff. Resuming it completes the
// commit and goes on with the target: it must not look the target up among
// its own handoffs.
//
// Checked to fail without the fix: resume failed with `handoff target
// "billing" is not a handoff of agent "billing"`.
func TestHandoffSavedAfterItWasTaken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	billing := &pipeline.Agent{Name: "billing", Model: scripted.New(scripted.Reply("Billing here."))}
	triage := &pipeline.Agent{
		Name: "triage", Handoffs: []pipeline.Handoff{{Agent: billing}},
		Model: scripted.New(scripted.CallTool(pipeline.HandoffToolName("billing"), `{}`)),
	}
	store := faulty.New(memory.New(), faulty.FailBefore(2)) // the input lands; the handoff's commit fails
	t.Cleanup(func() { _ = store.Close() })
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
	res, err := runner.Run(ctx, triage, pipeline.UserInput("My invoice is wrong."), pipeline.WithSessionID(sid))
	if !errors.Is(err, faulty.ErrInjected) {
		t.Fatalf("run = %v, want the injected append failure", err)
	}
	doc, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	// The save that took the handoff: the same state on the target agent.
	taken := bytes.Replace(doc, []byte(`"agent":"triage"`), []byte(`"agent":"billing"`), 1)
	if bytes.Equal(taken, doc) {
		t.Fatalf("no agent field in %s", doc)
	}
	run, err := state.Unmarshal(taken)
	if err != nil {
		t.Fatal(err)
	}
	res, err = runner.Resume(ctx, billing, run)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.FinalOutput() != "Billing here." || res.LastAgent().Name != "billing" {
		t.Errorf("resume ended with %q from %q, want billing's answer", res.FinalOutput(), res.LastAgent().Name)
	}
	want := []string{"user:My invoice is wrong.", "handoff:transfer_to_billing", `handoff_output:{"assistant":"billing"}`, "msg:Billing here."}
	if d := cmp.Diff(want, show(list(t, store))); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
}
