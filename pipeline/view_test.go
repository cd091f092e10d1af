package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// inputTexts returns the kinds and texts of a model input, for comparing.
func inputTexts(in state.Items) []string {
	var out []string
	for _, it := range in.All() {
		out = append(out, it.Kind().String()+":"+it.Text())
	}
	return out
}

// TestViewIsWhatEveryModelStageSees checks that the core applies a run's
// view when it builds a model call: the model and a model-stage middleware
// both get the view's items followed by the input after From.
func TestViewIsWhatEveryModelStageSees(t *testing.T) {
	t.Parallel()
	var seen []string
	observe := pipeline.Middleware{Name: "observe", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			seen = inputTexts(c.Input)
			return next.Respond(ctx, c)
		})
	}}
	m := scripted.New(scripted.Reply("fine"))
	r := pipeline.NewRunner(pipeline.WithMiddleware(observe))
	run := state.NewRun("r1", "a")
	if err := runcore.SetHistory(run, []state.Item{state.UserMessage("one"), state.AssistantMessage("", "two"), state.UserMessage("three")}); err != nil {
		t.Fatal(err)
	}
	if err := pipeline.SetView(run, &pipeline.View{ID: "b1", Items: []state.Item{state.SystemMessage("summary of one, two")}, From: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, []state.Item{state.UserMessage("four")}, pipeline.WithState(run))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"system_message:summary of one, two", "user_message:three", "user_message:four"}
	if got := inputTexts(m.Calls()[0].Input); !equalStrings(got, want) {
		t.Errorf("model input = %q, want %q", got, want)
	}
	if !equalStrings(seen, want) {
		t.Errorf("middleware saw %q, want %q", seen, want)
	}
	if got, want := res.LastResponseID(), "resp_r1_1"; got != want {
		t.Errorf("LastResponseID() = %q, want the scripted response's ID %q", got, want)
	}
}

// TestViewOutOfRangeFails checks that a view that starts beyond the model
// input fails the call instead of sending another input.
func TestViewOutOfRangeFails(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply("fine"))
	run := state.NewRun("r1", "a")
	run.SetExtension(pipeline.ViewKey, json.RawMessage(`{"id":"b","items":[],"from":5}`))
	_, err := pipeline.NewRunner().Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, []state.Item{state.UserMessage("hi")}, pipeline.WithState(run))
	if err == nil || len(m.Calls()) != 0 {
		t.Fatalf("Run = %v with %d model calls, want an error before any call", err, len(m.Calls()))
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestViewDroppedWhenItsContextIsReplaced checks that a view whose covered
// item is no longer where it says (a handoff filter replaced the context)
// is dropped: the model sees the model input whole.
func TestViewDroppedWhenItsContextIsReplaced(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply("fine"))
	run := state.NewRun("r1", "a")
	hist := []state.Item{state.UserMessage("one"), state.AssistantMessage("", "two")}
	if err := runcore.SetHistory(run, hist); err != nil {
		t.Fatal(err)
	}
	other := state.ItemsOf([]state.Item{state.UserMessage("other"), state.AssistantMessage("", "two")})
	v := &pipeline.View{ID: "b1", Items: []state.Item{state.SystemMessage("summary")}, From: 1, Covered: pipeline.CoveredDigest(other, 1)}
	if err := pipeline.SetView(run, v); err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.NewRunner().Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, []state.Item{state.UserMessage("three")}, pipeline.WithState(run))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user_message:one", "assistant_message:two", "user_message:three"}
	if got := inputTexts(m.Calls()[0].Input); !equalStrings(got, want) {
		t.Errorf("model input = %q, want %q", got, want)
	}
	if _, ok, _ := pipeline.ViewOf(res.State()); ok {
		t.Error("the stale view is still in the run's state")
	}
}
