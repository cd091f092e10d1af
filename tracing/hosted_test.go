package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

func hostedItem(t *testing.T, kind state.Kind, raw string) state.Item {
	t.Helper()
	it, err := state.ParseItem(kind, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// TestHostedCallEvents: each hosted call (and opaque item) of a response is
// an event on the model call's span, with its type, ID and status.
func TestHostedCallEvents(t *testing.T) {
	h := newHarness(t)
	ws := hostedItem(t, state.KindHostedCall, `{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"go"}}`)
	mcp := hostedItem(t, state.KindHostedCall, `{"id":"mcp_1","type":"mcp_call","server_label":"deepwiki","name":"ask_question","arguments":"{}","output":"ok","status":"failed"}`)
	unknown := hostedItem(t, state.KindOpaque, `{"type":"hologram_call","id":"h_1"}`)
	agent := &pipeline.Agent{Name: "assistant", Model: scripted.New(scripted.Respond(
		scripted.Item(ws), scripted.Item(mcp), scripted.Item(unknown), scripted.Text("done")))}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range h.ended() {
		if !strings.HasPrefix(s.Name(), "chat") {
			continue
		}
		for _, ev := range s.Events() {
			if ev.Name != "turnkit.hosted_call" {
				continue
			}
			var parts []string
			for _, kv := range ev.Attributes {
				parts = append(parts, string(kv.Key)+"="+kv.Value.String())
			}
			got = append(got, strings.Join(parts, " "))
		}
	}
	want := []string{
		"turnkit.hosted.type=web_search_call gen_ai.tool.call.id=ws_1 turnkit.hosted.status=completed",
		"turnkit.hosted.type=mcp_call gen_ai.tool.call.id=mcp_1 turnkit.hosted.status=failed turnkit.hosted.server=deepwiki gen_ai.tool.name=ask_question",
		"turnkit.hosted.type=hologram_call",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hosted call events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
