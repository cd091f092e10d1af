package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

func sqlTool(got *string) pipeline.Tool {
	return tool.Text("run_sql", "Runs one SQL statement.", func(_ context.Context, input string) (string, error) {
		*got = input
		return "1", nil
	}, tool.Grammar("lark", `start: "SELECT" /[^;]+/ ";"`))
}

// TestCustomTool: a custom tool is declared with its grammar, the model's
// custom_tool_call runs it with the text input, and the next request
// carries the call and its custom_tool_call_output, plain and streamed.
func TestCustomTool(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newServer(t, replyBody(responseBody(t, "resp_c1", itemFixture(t, "custom_tool_call"))), reply{file: "responses_final.json"})
			var got string
			agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(0)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
				Tools: []pipeline.Tool{sqlTool(&got)}}
			out := runBoth(t, mode.stream, agent, "one?")
			if got != "SELECT 1;" {
				t.Errorf("tool got %q", got)
			}
			if want := []string{"user_message", "custom_call(run_sql)", "custom_output(run_sql)", "assistant_message"}; !slices.Equal(describe(out.items), want) {
				t.Errorf("items %v, want %v", describe(out.items), want)
			}
			reqs := srv.Requests()
			var first struct{ Tools []json.RawMessage }
			if err := json.Unmarshal(reqs[0].body, &first); err != nil {
				t.Fatal(err)
			}
			want := `{"type":"custom","name":"run_sql","description":"Runs one SQL statement.","format":{"type":"grammar","syntax":"lark","definition":"start: \"SELECT\" /[^;]+/ \";\""}}`
			if len(first.Tools) != 1 || compact(t, first.Tools[0]) != want {
				t.Errorf("tools %s, want [%s]", first.Tools, want)
			}
			input := inputOf(t, reqs[1])
			wantIn := []string{compact(t, itemFixture(t, "custom_tool_call")), `{"type":"custom_tool_call_output","call_id":"call_ct","output":"1"}`}
			if len(input) < 3 || string(input[1]) != wantIn[0] || string(input[2]) != wantIn[1] {
				t.Errorf("second input %s, want the call and %s", input, wantIn[1])
			}
		})
	}
}

// TestCustomToolApproval: a custom tool's call waits for approval like a
// function call, with its text input as the arguments, across a
// checkpoint; the session never holds the call without its output.
func TestCustomToolApproval(t *testing.T) {
	ctx := context.Background()
	srv := newServer(t, replyBody(responseBody(t, "resp_c1", itemFixture(t, "custom_tool_call"))), reply{file: "responses_final.json"})
	var got string
	agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(0)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
		Tools: []pipeline.Tool{sqlTool(&got)}}
	store := memory.New()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), approval.Require(approval.ByTool("run_sql"))))
	res, err := runner.Run(ctx, agent, pipeline.UserInput("one?"), pipeline.WithSessionID("s"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interruptions()) != 1 || res.Interruptions()[0].Arguments != "SELECT 1;" || got != "" {
		t.Fatalf("interruptions %+v, tool got %q", res.Interruptions(), got)
	}
	checkNoDanglingCall(t, store, "s")
	data, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Approve("call_ct"); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Resume(ctx, agent, run); err != nil {
		t.Fatal(err)
	}
	stored, err := store.List(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"user_message", "custom_call(run_sql)", "custom_output(run_sql)", "assistant_message"}; !slices.Equal(describe(stored), want) || got != "SELECT 1;" {
		t.Errorf("session %v (tool got %q), want %v", describe(stored), got, want)
	}
}

func TestCustomToolChat(t *testing.T) {
	c := call(false)
	var got string
	c.Tools = []pipeline.ToolSpec{sqlTool(&got).Spec()}
	if _, err := openai.NewChat(newServer(t).client(0)).Respond(context.Background(), c); !errors.Is(err, openai.ErrUnsupportedTool) {
		t.Fatalf("err = %v, want ErrUnsupportedTool", err)
	}
}

// TestCustomToolTerminalWithheld: a terminal custom tool whose output an
// output guardrail trips on is stored with its output withheld, as a
// custom_tool_call_output, so the history stays valid model input.
func TestCustomToolTerminalWithheld(t *testing.T) {
	srv := newServer(t, replyBody(responseBody(t, "resp_c1", itemFixture(t, "custom_tool_call"))))
	var got string
	agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(0)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
		Tools: []pipeline.Tool{sqlTool(&got)}, ToolUse: pipeline.StopOnFirstTool()}
	store := memory.New()
	trip := func(context.Context, *pipeline.Agent, string) (guardrails.Verdict, error) {
		return guardrails.Trip(nil), nil
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), guardrails.Output(trip)))
	if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("one?"), pipeline.WithSessionID("s")); !errors.Is(err, guardrails.ErrTripwire) {
		t.Fatalf("err = %v, want a tripwire", err)
	}
	stored, err := store.List(context.Background(), "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"user_message", "custom_call(run_sql)", "custom_output(run_sql)"}; !slices.Equal(describe(stored), want) {
		t.Fatalf("session %v, want %v", describe(stored), want)
	}
	if want := `{"type":"custom_tool_call_output","call_id":"call_ct","output":"` + persistence.WithheldOutput + `"}`; string(stored[2].Raw()) != want {
		t.Errorf("stored output %s, want %s", stored[2].Raw(), want)
	}
}
