package openai_test

import (
	"context"
	"slices"
	"testing"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestHostedCallProgress: a streamed run yields a HostedCallProgress event
// for each step of a hosted call as the API streams it, in order, and
// records the same items as a plain run of the same response.
func TestHostedCallProgress(t *testing.T) {
	types := []string{"web_search_call", "code_interpreter_call", "mcp_call"}
	var raws [][]byte
	for _, typ := range types {
		raws = append(raws, itemFixture(t, typ))
	}
	raws = append(raws, itemFixture(t, "message"))
	run := func(stream bool) (items []state.Item, steps map[string][]string) {
		t.Helper()
		srv := newServer(t, replyBody(responseBody(t, "resp_progress", raws...)))
		agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(0)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
		runner := pipeline.NewRunner()
		if !stream {
			res, err := runner.Run(context.Background(), agent, pipeline.UserInput("look it up"))
			if err != nil {
				t.Fatal(err)
			}
			return res.NewItems(), nil
		}
		steps = map[string][]string{}
		var res *pipeline.Result
		for ev, err := range runner.Stream(context.Background(), agent, pipeline.UserInput("look it up")) {
			if err != nil {
				t.Fatal(err)
			}
			switch ev := ev.(type) {
			case pipeline.HostedCallProgress:
				steps[ev.Type] = append(steps[ev.Type], ev.Status)
				if ev.ItemID == "" {
					t.Errorf("%s %s: no item ID", ev.Type, ev.Status)
				}
			case pipeline.RunCompleted:
				res = ev.Result
			}
		}
		return res.NewItems(), steps
	}
	plain, _ := run(false)
	streamed, steps := run(true)
	want := map[string][]string{
		"web_search_call":       {"in_progress", "searching", "completed"},
		"code_interpreter_call": {"in_progress", "interpreting", "completed"},
		"mcp_call":              {"in_progress", "completed"},
	}
	for typ, w := range want {
		if !slices.Equal(steps[typ], w) {
			t.Errorf("%s steps %v, want %v", typ, steps[typ], w)
		}
	}
	if len(steps) != len(want) {
		t.Errorf("progress for %d call types, want %d: %v", len(steps), len(want), steps)
	}
	if len(plain) != len(streamed) {
		t.Fatalf("plain run recorded %d items, streamed %d", len(plain), len(streamed))
	}
	for i := range plain {
		if plain[i].Kind() != streamed[i].Kind() || string(plain[i].Raw()) != string(streamed[i].Raw()) {
			t.Errorf("item %d: plain %s, streamed %s", i, plain[i], streamed[i])
		}
	}
}
