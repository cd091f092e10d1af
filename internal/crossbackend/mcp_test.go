package crossbackend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

const mcpName = "mcp:deepwiki/ask_question"

// mcpAgent is an agent with the deepwiki remote MCP server, which asks
// approval for every call, over the model at url.
func mcpAgent(url string) *pipeline.Agent {
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // no idle connection outlives a test
	client := sdk.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithHTTPClient(hc), option.WithMaxRetries(0))
	return &pipeline.Agent{
		Name: "assistant", Model: openai.New(client), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
		Tools: []pipeline.Tool{openai.MCP(responses.ToolMcpParam{
			ServerLabel:     "deepwiki",
			ServerURL:       param.NewOpt("https://mcp.deepwiki.com/mcp"),
			RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: param.NewOpt("always")},
		})},
	}
}

// TestMCPApprovalAcrossProcesses pauses a run on an MCP approval request
// in this process, with a SQLite session, and approves and resumes it in a
// child process from the checkpoint file; the child talks to this test's
// server. model/openai's tests run the same cycle in one process on the
// in-memory store.
func TestMCPApprovalAcrossProcesses(t *testing.T) {
	if os.Getenv("TURNKIT_MCP_CHILD") != "" {
		t.Skip("the child's own run")
	}
	ctx := context.Background()
	dir := t.TempDir()
	db, ckpt := filepath.Join(dir, "session.db"), filepath.Join(dir, "run.json")
	srv := newServer(t,
		responseBody(t, "resp_m1", readItems(t, "mcp_list_tools", "mcp_approval_request")),
		responseBody(t, "resp_m2", readItems(t, "mcp_call", "message")))
	store, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), approval.Require(nil)))
	res, err := runner.Run(ctx, mcpAgent(srv.srv.URL), pipeline.UserInput("what is a turn?"), pipeline.WithSessionID("s"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interruptions()) != 1 || res.Interruptions()[0].Tool != mcpName {
		t.Fatalf("interruptions %+v", res.Interruptions())
	}
	data, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ckpt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestMCPApprovalChild$", "-test.v")
	cmd.Env = append(os.Environ(), "TURNKIT_MCP_CHILD="+srv.srv.URL, "TURNKIT_MCP_DB="+db, "TURNKIT_MCP_CKPT="+ckpt)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}

	store, err = sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	stored, err := store.List(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user_message", "hosted_call(mcp_list_tools)", "mcp_approval_request(" + mcpName + ")",
		"mcp_approval_response(" + mcpName + ")", "hosted_call(mcp_call)", "assistant_message"}
	if got := describe(stored); !slices.Equal(got, want) {
		t.Errorf("session %v, want %v\nchild:\n%s", got, want, out)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestMCPApprovalChild is the child process of
// TestMCPApprovalAcrossProcesses; it does nothing on its own.
func TestMCPApprovalChild(t *testing.T) {
	url := os.Getenv("TURNKIT_MCP_CHILD")
	if url == "" {
		t.Skip("run by TestMCPApprovalAcrossProcesses")
	}
	ctx := context.Background()
	data, err := os.ReadFile(os.Getenv("TURNKIT_MCP_CKPT"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	p := run.Pending()
	if len(p) != 1 || p[0].Tool != mcpName {
		t.Fatalf("pending %+v", p)
	}
	if err := run.Approve(p[0].CallID); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(os.Getenv("TURNKIT_MCP_DB"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), approval.Require(nil)))
	res, err := runner.Resume(ctx, mcpAgent(url), run)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("final:", res.FinalOutput())
	if res.FinalOutput() != "Done and dusted." {
		t.Fatalf("final %q", res.FinalOutput())
	}
}

// readItems returns the recorded output items of the given types.
func readItems(t *testing.T, types ...string) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(types))
	for i, typ := range types {
		out[i] = readFixture(t, filepath.Join("items", typ+".json"))
	}
	return out
}

// describe names each item by kind, and by name when it has one.
func describe(items []state.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Kind().String()
		if it.Name() != "" {
			out[i] += "(" + it.Name() + ")"
		}
	}
	return out
}
