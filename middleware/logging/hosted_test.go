package logging_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestHostedCallsLogged: the model call's event lists the response's
// hosted calls (and opaque items) with their type, ID and status.
func TestHostedCallsLogged(t *testing.T) {
	ws, err := state.HostedCall([]byte(`{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"secret"}}`))
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := state.Opaque([]byte(`{"type":"hologram_call"}`))
	if err != nil {
		t.Fatal(err)
	}
	log, logs := observe(zap.DebugLevel)
	runner := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(log)))
	a := agent(scripted.Respond(scripted.Item(ws), scripted.Item(unknown), scripted.Text("done")))
	if _, err := runner.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	var got any
	for _, e := range entries(logs) {
		if e.Message == "model call" {
			got = e.Fields["hosted_calls"]
		}
	}
	want := []any{
		map[string]any{"type": "web_search_call", "id": "ws_1", "status": "completed"},
		map[string]any{"type": "hologram_call"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hosted_calls (-want +got):\n%s", diff)
	}
}
