package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
	"github.com/turnkit/turnkit/tool/deferred"
)

type cityArgs struct {
	City string `json:"city"`
}

// searchAgent is an agent with one tool of its own and a deferred set of
// get_weather and nine others, on m.
func searchAgent(t *testing.T, m pipeline.Model) (*pipeline.Agent, *deferred.Set) {
	t.Helper()
	many := []pipeline.Tool{tool.Func("get_weather", "Returns the weather in a city.", func(_ context.Context, a cityArgs) (string, error) {
		return "sunny in " + a.City, nil
	})}
	for i := range 9 {
		many = append(many, tool.Func(fmt.Sprintf("other_%d", i), "Another tool.\nWith a second line.", func(context.Context, cityArgs) (string, error) {
			return "", nil
		}))
	}
	set := deferred.New(many...)
	own := tool.Func("now", "Returns the time.", func(context.Context, struct{}) (string, error) { return "noon", nil })
	return &pipeline.Agent{Name: "a", Model: m, Settings: pipeline.ModelSettings{Model: "gpt-5.4"},
		Tools: append([]pipeline.Tool{own}, set.Tools()...)}, set
}

// requestTools decodes the tools of a recorded request body.
func requestTools(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var req struct {
		Tools []map[string]any `json:"tools"`
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Tools
}

// TestHostedToolSearch: with WithHostedToolSearch the deferred tools go
// out as functions with defer_loading beside the hosted tool_search tool
// (and no client-side search tool), the response's search items are kept
// and sent back with the call's output, and the run calls the tool the
// API loaded.
func TestHostedToolSearch(t *testing.T) {
	t.Parallel()
	srv := newServer(t, reply{file: "responses_tool_search.json"}, reply{file: "responses_final.json"})
	agent, set := searchAgent(t, openai.New(srv.client(0), openai.WithHostedToolSearch()))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(set.Middleware()))
	res, err := runner.Run(context.Background(), agent, pipeline.UserInput("weather in Paris?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalOutput() != "It is sunny in Paris, 22 °C." {
		t.Fatalf("final output %q", res.FinalOutput())
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		tools := requestTools(t, r.body)
		if len(tools) != 12 {
			t.Fatalf("request %d: %d tools, want now, tool_search and the 10 deferred: %s", i, len(tools), r.body)
		}
		if tools[0]["name"] != "now" || tools[0]["defer_loading"] != nil {
			t.Errorf("request %d: first tool %v, want the agent's own, not deferred", i, tools[0])
		}
		if len(tools[1]) != 1 || tools[1]["type"] != "tool_search" {
			t.Errorf("request %d: second tool %v, want {\"type\":\"tool_search\"}", i, tools[1])
		}
		for _, d := range tools[2:] {
			if d["type"] != "function" || d["defer_loading"] != true || d["parameters"] == nil || d["name"] == deferred.SearchToolName {
				t.Errorf("request %d: deferred tool %v, want a function with its parameters and defer_loading", i, d)
			}
		}
	}
	var second struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(reqs[1].body, &second); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, it := range second.Input {
		types = append(types, fmt.Sprint(it["type"]))
	}
	if want := []string{"message", "tool_search_call", "tool_search_output", "function_call", "function_call_output"}; !slices.Equal(types, want) {
		t.Fatalf("second request's input %v, want %v", types, want)
	}
	if out := second.Input[4]["output"]; out != "sunny in Paris" {
		t.Errorf("the call's output %v", out)
	}
}

// TestClientToolSearchByDefault: without the option the Responses
// adapter gets the client-side search, as any model does.
func TestClientToolSearchByDefault(t *testing.T) {
	t.Parallel()
	srv := newServer(t, reply{file: "responses_final.json"})
	agent, set := searchAgent(t, openai.New(srv.client(0)))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(set.Middleware()))
	if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("weather in Paris?")); err != nil {
		t.Fatal(err)
	}
	tools := requestTools(t, srv.Requests()[0].body)
	var names []string
	for _, d := range tools {
		names = append(names, fmt.Sprint(d["name"]))
	}
	if want := []string{"now", deferred.SearchToolName}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}
