package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// choiceModel calls the lookup tool whenever its call's tool choice forces
// a call, as a model does, and answers otherwise; it records the choices
// it was called with.
type choiceModel struct {
	mu      sync.Mutex
	choices []string
}

func (m *choiceModel) Respond(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	m.mu.Lock()
	m.choices = append(m.choices, c.Settings.ToolChoice)
	n := len(m.choices)
	m.mu.Unlock()
	if c.Settings.ToolChoice == "required" || c.Settings.ToolChoice == "lookup" {
		id := fmt.Sprintf("call_%d", n)
		return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc_"+id, id, "lookup", `{}`)}}, nil
	}
	return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("", "answered")}}, nil
}

func (m *choiceModel) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.choices...)
}

func lookupTool() pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: "lookup"}, func(context.Context, json.RawMessage) (string, error) { return "found", nil })
}

func TestToolChoiceReset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		choice   string
		opts     []pipeline.Option
		want     []string
		maxTurns bool
	}{
		{name: "required", choice: "required", want: []string{"required", "auto"}},
		{name: "named tool", choice: "lookup", want: []string{"lookup", "auto"}},
		{name: "auto untouched", choice: "auto", want: []string{"auto"}},
		{name: "default untouched", choice: "", want: []string{""}},
		{
			name: "kept loops to the turn limit", choice: "required", opts: []pipeline.Option{pipeline.WithToolChoiceKept()},
			want: []string{"required", "required", "required", "required"}, maxTurns: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &choiceModel{}
			runner := pipeline.NewRunner(append(tt.opts, pipeline.WithMaxTurns(4))...)
			agent := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{lookupTool()}, Settings: pipeline.ModelSettings{ToolChoice: tt.choice}}
			res, err := runner.Run(context.Background(), agent, pipeline.UserInput("go"))
			if diff := cmp.Diff(tt.want, m.got()); diff != "" {
				t.Errorf("tool choices (-want +got):\n%s", diff)
			}
			if tt.maxTurns {
				if !errors.Is(err, pipeline.ErrMaxTurns) {
					t.Fatalf("err = %v, want ErrMaxTurns", err)
				}
				return
			}
			if err != nil || res.FinalOutput() != "answered" {
				t.Fatalf("run = %q, %v", res.FinalOutput(), err)
			}
		})
	}
}

// The reset is in the run's state: a run that paused after its forced
// call resumes from a checkpoint in another process with auto; an agent
// handed the run forces its own first call.
func TestToolChoiceResetSurvivesCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var once sync.Once
	pausing := pipeline.NewTool(pipeline.ToolSpec{Name: "lookup"}, func(context.Context, json.RawMessage) (string, error) {
		paused := false
		once.Do(func() { paused = true })
		if paused {
			return "", pipeline.ErrToolPending
		}
		return "found", nil
	})
	m := &choiceModel{}
	agent := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{pausing}, Settings: pipeline.ModelSettings{ToolChoice: "required"}}
	runner := pipeline.NewRunner()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("go"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("run = %v, %v; want a pause", res, err)
	}
	data, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Approve(run.Pending()[0].CallID); err != nil {
		t.Fatal(err)
	}
	res, err = pipeline.NewRunner().Resume(ctx, agent, run)
	if err != nil || res.FinalOutput() != "answered" {
		t.Fatalf("resume = %q, %v", res.FinalOutput(), err)
	}
	if diff := cmp.Diff([]string{"required", "auto"}, m.got()); diff != "" {
		t.Errorf("tool choices (-want +got):\n%s", diff)
	}
}

// A tool choice that names a tool disabled on the turn goes to auto, kept
// or not: the model could not call the tool.
func TestToolChoiceOfADisabledTool(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		m := &choiceModel{}
		var opts []pipeline.Option
		if keep {
			opts = append(opts, pipeline.WithToolChoiceKept())
		}
		off := conditional{Tool: lookupTool(), cond: func(context.Context, *pipeline.Turn) bool { return false }}
		agent := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{off}, Settings: pipeline.ModelSettings{ToolChoice: "lookup"}}
		res, err := pipeline.NewRunner(opts...).Run(context.Background(), agent, pipeline.UserInput("go"))
		if err != nil || res.FinalOutput() != "answered" {
			t.Fatalf("keep %v: run = %q, %v", keep, res.FinalOutput(), err)
		}
		if diff := cmp.Diff([]string{"auto"}, m.got()); diff != "" {
			t.Errorf("keep %v: tool choices (-want +got):\n%s", keep, diff)
		}
	}
}

// conditional is a tool with a condition.
type conditional struct {
	pipeline.Tool
	cond pipeline.Condition
}

func (c conditional) Condition() pipeline.Condition { return c.cond }
