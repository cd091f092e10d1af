package openai_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/turnkit/turnkit/middleware/compaction"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// Model is a compaction.Compactor.
var _ compaction.Compactor = (*openai.Model)(nil)

// TestCompactWithTheResponsesAPI: the model as a compactor calls
// /responses/compact with the head of the input, and the next request
// sends what it returned (the user's messages, the compaction item)
// followed by the items kept; the compaction item is kept in the run's
// state through a checkpoint.
func TestCompactWithTheResponsesAPI(t *testing.T) {
	srv := newServer(t,
		reply{file: "responses_text.json"},
		reply{file: "responses_text.json"},
		reply{file: "responses_compacted.json"},
		reply{file: "responses_text.json"})
	m := openai.New(srv.client(0))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(memory.New(), persistence.WithContinuation()),
		compaction.Middleware(m, compaction.WithMaxItems(3), compaction.WithKeep(1)),
	))
	var res *pipeline.Result
	for _, text := range []string{"hello", "again", "third"} {
		var err error
		if res, err = runner.Run(context.Background(), textAgent(m), pipeline.UserInput(text), pipeline.WithSessionID("s")); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	var paths []string
	for _, r := range reqs {
		paths = append(paths, r.path)
	}
	if want := []string{"/v1/responses", "/v1/responses", "/v1/responses/compact", "/v1/responses"}; !slices.Equal(paths, want) {
		t.Fatalf("paths %q, want %q", paths, want)
	}
	var compact struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(reqs[2].body, &compact); err != nil {
		t.Fatal(err)
	}
	if compact.Model != "gpt-5-mini" || len(compact.Input) != 4 {
		t.Fatalf("compact request: model %q with %d input items, want gpt-5-mini and the 4 items before the last", compact.Model, len(compact.Input))
	}
	checkSent(t, []sent{sentOf(t, reqs[3])}, []sent{{Types: []string{"message", "compaction", "message"}}})

	data, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := pipeline.ViewOf(run)
	if err != nil || !ok || len(v.Items) != 2 || v.Items[1].Kind() != state.KindOpaque || v.Items[1].Name() != "compaction" {
		t.Fatalf("checkpointed view = %+v, %v, %v; want the user message and the compaction item", v, ok, err)
	}
}
