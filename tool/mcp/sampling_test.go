package mcp_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/mcp"
)

// TestEverythingSampling: with WithSampling, the reference server offers
// its sampling tool, and a call of it is served by a run of the agent's
// model with the server's system prompt, token limit and message; without
// it, the client does not declare sampling and the tool is not offered.
func TestEverythingSampling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	off := connect(t, []mcp.Server{stdioEverything(t)})
	for _, tl := range off.Tools() {
		if tl.Spec().Name == "trigger-sampling-request" {
			t.Fatal("sampling tool offered to a client that did not declare sampling")
		}
	}

	var mu sync.Mutex
	var seen []*pipeline.ModelCall
	model := pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		mu.Lock()
		seen = append(seen, c)
		mu.Unlock()
		return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_1", "sampled answer")}}, nil
	})
	agent := &pipeline.Agent{Name: "sampler", Instructions: "own instructions", Model: model,
		Settings: pipeline.ModelSettings{Model: "test-model"}}
	on := connect(t, []mcp.Server{stdioEverything(t)}, mcp.WithSampling(pipeline.NewRunner(), agent))
	out, err := find(t, on.Tools(), "trigger-sampling-request").Call(ctx, callOf("trigger-sampling-request", `{"prompt":"what is 2+2?","maxTokens":42}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sampled answer", `"model": "test-model"`, `"role": "assistant"`} {
		if !strings.Contains(out, want) {
			t.Errorf("tool output %q lacks %q", out, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("model called %d times, want once", len(seen))
	}
	c := seen[0]
	if c.Instructions != "You are a helpful test server." || c.Settings.MaxOutputTokens == nil || *c.Settings.MaxOutputTokens != 42 || len(c.Tools) != 0 {
		t.Errorf("model call: instructions %q, max tokens %v, %d tools; want the server's prompt, 42 and none", c.Instructions, c.Settings.MaxOutputTokens, len(c.Tools))
	}
	if c.Input.Len() != 1 || !strings.Contains(c.Input.At(0).Text(), "what is 2+2?") {
		t.Errorf("model input %v, want the server's message", c.Input)
	}
}
