package mcp_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/mcp"
)

const elicitTool = "trigger-elicitation-request"

// echoModel calls tool with args on a fresh run, and once a tool output
// is in its input, answers with that output: the run's final output is
// what the server returned.
func echoModel(tool, args string) pipeline.Model {
	return pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		if n := c.Input.Len(); n > 0 && c.Input.At(n-1).Kind().IsOutput() {
			return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("msg_2", c.Input.At(n-1).Text())}}, nil
		}
		return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc_1", "call_ask", tool, args)}}, nil
	})
}

// TestElicitationOffByDefault: without an option the client does not
// declare elicitation, so the reference server does not offer its tool.
func TestElicitationOffByDefault(t *testing.T) {
	t.Parallel()
	off := connect(t, []mcp.Server{stdioEverything(t)})
	for _, tl := range off.Tools() {
		if tl.Spec().Name == elicitTool {
			t.Fatal("elicitation tool offered to a client that did not declare elicitation")
		}
	}
	on := connect(t, []mcp.Server{stdioEverything(t)}, mcp.WithElicitation())
	find(t, on.Tools(), elicitTool)
}

// TestElicitationPausesAcrossProcesses: the reference server's request
// pauses the run with the request on the interruption; an answer that
// does not fit the schema is refused; the accepted answer, recorded on
// the state, is marshaled and the run resumed in a fresh process, whose
// new server process gets the answer when it asks again.
func TestElicitationPausesAcrossProcesses(t *testing.T) {
	if os.Getenv("TURNKIT_MCP_ELICIT_CKPT") != "" {
		t.Skip("the child's own run")
	}
	t.Parallel()
	ctx := context.Background()
	ts := connect(t, []mcp.Server{stdioEverything(t)}, mcp.WithElicitation())
	agent := &pipeline.Agent{Name: "a", Model: echoModel(elicitTool, `{}`), Tools: ts.Tools()}
	res, err := pipeline.NewRunner().Run(ctx, agent, pipeline.UserInput("ask me"))
	if err != nil {
		t.Fatal(err)
	}
	in := res.Interruptions()
	if len(in) != 1 || !in[0].IsElicitation() || in[0].CallID != "call_ask" || in[0].Tool != elicitTool {
		t.Fatalf("interruptions %+v, want the call waiting for an answer", in)
	}
	e := in[0].Elicitation
	if e.Server != "everything" || e.Message != "Please provide inputs for the following fields:" || !strings.Contains(e.Schema, `"required":["name"]`) {
		t.Fatalf("request %+v", e)
	}
	run := res.State()
	if err := mcp.Accept(run, "call_ask", map[string]any{"check": true}); !errors.Is(err, state.ErrInvalidAnswer) {
		t.Fatalf("Accept without the required name = %v, want ErrInvalidAnswer", err)
	}
	if err := mcp.Accept(run, "call_ask", map[string]any{"name": "Ada Lovelace", "check": true, "integer": 7}); err != nil {
		t.Fatal(err)
	}
	data, err := state.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(ckpt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestElicitationResumeChild$", "-test.v")
	cmd.Env = append(os.Environ(), "TURNKIT_MCP_ELICIT_CKPT="+ckpt)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{"User provided the requested information", "- Name: Ada Lovelace", "- Favorite Integer: 7", `"action": "accept"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child's final output lacks %q:\n%s", want, out)
		}
	}
}

// TestElicitationResumeChild is the fresh process of
// TestElicitationPausesAcrossProcesses; it does nothing on its own.
func TestElicitationResumeChild(t *testing.T) {
	path := os.Getenv("TURNKIT_MCP_ELICIT_CKPT")
	if path == "" {
		t.Skip("run by TestElicitationPausesAcrossProcesses")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	ts := connect(t, []mcp.Server{stdioEverything(t)}, mcp.WithElicitation())
	agent := &pipeline.Agent{Name: "a", Model: echoModel(elicitTool, `{}`), Tools: ts.Tools()}
	res, err := pipeline.NewRunner().Resume(context.Background(), agent, run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted() {
		t.Fatalf("paused again: %+v", res.Interruptions())
	}
	t.Log("final output:\n" + res.FinalOutput())
}

// TestElicitationDeclined: a declined request reaches the server as
// declined on resume, in one process.
func TestElicitationDeclined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ts := connect(t, []mcp.Server{stdioEverything(t)}, mcp.WithElicitation())
	agent := &pipeline.Agent{Name: "a", Model: echoModel(elicitTool, `{}`), Tools: ts.Tools()}
	runner := pipeline.NewRunner()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("ask me"))
	if err != nil {
		t.Fatal(err)
	}
	run := res.State()
	if err := run.AnswerElicitation("call_ask", state.Decline, ""); err != nil {
		t.Fatal(err)
	}
	res, err = runner.Resume(ctx, agent, run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.FinalOutput(), "User declined") {
		t.Fatalf("final output %q, want the server's declined answer; interruptions %+v", res.FinalOutput(), res.Interruptions())
	}
}

// TestElicitationHandler: with a handler the request is answered while
// the call waits, the run does not pause, and the handler sees the call.
func TestElicitationHandler(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	h := func(_ context.Context, c *pipeline.ToolCall, req state.Elicitation) (state.ElicitAction, map[string]any, error) {
		mu.Lock()
		seen = append(seen, c.CallID+" "+req.Server+" "+req.Message)
		mu.Unlock()
		return state.Accept, map[string]any{"name": "Grace Hopper"}, nil
	}
	ts := connect(t, []mcp.Server{stdioEverything(t)}, mcp.WithElicitationHandler(h))
	agent := &pipeline.Agent{Name: "a", Model: echoModel(elicitTool, `{}`), Tools: ts.Tools()}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("ask me"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted() || !strings.Contains(res.FinalOutput(), "- Name: Grace Hopper") {
		t.Fatalf("interrupted %v, final output %q", res.Interrupted(), res.FinalOutput())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "call_ask everything Please provide inputs for the following fields:" {
		t.Fatalf("handler saw %q", seen)
	}
}

// TestElicitationAsksAgain: a call that asks a second, different
// question after its first was answered pauses again; the server sees
// the call once per pause and once more, with the same idempotency key.
func TestElicitationAsksAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ts := connect(t, []mcp.Server{helper(t)}, mcp.WithElicitation())
	agent := &pipeline.Agent{Name: "a", Model: echoModel("ask_twice", `{}`), Tools: ts.Tools()}
	runner := pipeline.NewRunner()
	res, err := runner.Run(ctx, agent, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"first?", "second?"} {
		in := res.Interruptions()
		if len(in) != 1 || in[0].Elicitation.Message != want {
			t.Fatalf("pause %d: interruptions %+v, want the question %q (final output %q)", i, in, want, res.FinalOutput())
		}
		run := res.State()
		if err := mcp.Accept(run, "call_ask", map[string]any{"answer": want + " yes"}); err != nil {
			t.Fatal(err)
		}
		if res, err = runner.Resume(ctx, agent, run); err != nil {
			t.Fatal(err)
		}
	}
	if res.Interrupted() {
		t.Fatalf("paused a third time: %+v", res.Interruptions())
	}
	if want := "call 3 of key " + res.State().ID() + "/call_ask: first? yes, second? yes"; res.FinalOutput() != want {
		t.Fatalf("final output %q, want %q", res.FinalOutput(), want)
	}
}
