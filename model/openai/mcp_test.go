package openai_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

const mcpName = "mcp:deepwiki/ask_question"

// mcpAgent is an agent with the deepwiki remote MCP server, which asks
// approval for every call, over the model at url.
func mcpAgent(url string) *pipeline.Agent {
	return &pipeline.Agent{
		Name: "assistant", Model: openai.New(clientAt(url)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
		Tools: []pipeline.Tool{openai.MCP(responses.ToolMcpParam{
			ServerLabel:     "deepwiki",
			ServerURL:       param.NewOpt("https://mcp.deepwiki.com/mcp"),
			RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: param.NewOpt("always")},
		})},
	}
}

// mcpReplies are the model's answers: the server's tools and an approval
// request; then, once answered, the MCP call and the final message.
func mcpReplies(t testing.TB) []reply {
	return []reply{
		replyBody(responseBody(t, "resp_m1", itemFixture(t, "mcp_list_tools"), itemFixture(t, "mcp_approval_request"))),
		replyBody(responseBody(t, "resp_m2", itemFixture(t, "mcp_call"), itemFixture(t, "message"))),
	}
}

// TestMCPApprovalCycle: an MCP approval request pauses the run with the
// request pending (server, tool, arguments); a decision on the restored
// checkpoint and a resume send the mcp_approval_response right after the
// request; the session never holds the request without its response.
func TestMCPApprovalCycle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decide   func(*state.Run, string) error
		response string
	}{
		{"approve", func(r *state.Run, id string) error { return r.Approve(id) },
			`{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true}`},
		{"reject", func(r *state.Run, id string) error { return r.Reject(id, "not today") },
			`{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":false,"reason":"not today"}`},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				ctx := context.Background()
				srv := newServer(t, mcpReplies(t)...)
				store := memory.New()
				runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), approval.Require(nil,
					approval.WithRejectionFormatter(func(_ *pipeline.ToolCall, d state.Decision) string { return d.Message }))))
				var res *pipeline.Result
				if mode.stream {
					for ev, err := range runner.Stream(ctx, mcpAgent(srv.srv.URL), pipeline.UserInput("what is a turn?"), pipeline.WithSessionID("s")) {
						if err != nil {
							t.Fatal(err)
						}
						if rc, ok := ev.(pipeline.RunCompleted); ok {
							res = rc.Result
						}
					}
				} else {
					var err error
					if res, err = runner.Run(ctx, mcpAgent(srv.srv.URL), pipeline.UserInput("what is a turn?"), pipeline.WithSessionID("s")); err != nil {
						t.Fatal(err)
					}
				}
				if len(res.Interruptions()) != 1 {
					t.Fatalf("interruptions %+v, want the approval request", res.Interruptions())
				}
				a := res.Interruptions()[0]
				if a.Tool != mcpName || a.CallID != "mcpr_1" || a.Arguments != `{"repoName":"turnkit/turnkit","question":"what is a turn?"}` {
					t.Errorf("pending %+v", a)
				}
				checkNoDanglingCall(t, store, "s")

				// Another process: the checkpoint's bytes, a new runner.
				data, err := state.Marshal(res.State())
				if err != nil {
					t.Fatal(err)
				}
				run, err := state.Unmarshal(data)
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.decide(run, a.CallID); err != nil {
					t.Fatal(err)
				}
				res, err = runner.Resume(ctx, mcpAgent(srv.srv.URL), run)
				if err != nil {
					t.Fatalf("Resume: %v", err)
				}
				if res.FinalOutput() != "Done and dusted." {
					t.Errorf("final %q", res.FinalOutput())
				}
				input := inputOf(t, srv.Requests()[1])
				i := slices.IndexFunc(input, func(r json.RawMessage) bool { return string(r) == compact(t, itemFixture(t, "mcp_approval_request")) })
				if i < 0 || i+1 >= len(input) || string(input[i+1]) != tc.response {
					t.Fatalf("second request's input does not answer the request with %s:\n%s", tc.response, input)
				}
				stored, err := store.List(ctx, "s", 0)
				if err != nil {
					t.Fatal(err)
				}
				want := []string{"user_message", "hosted_call(mcp_list_tools)", "mcp_approval_request(" + mcpName + ")",
					"mcp_approval_response(" + mcpName + ")", "hosted_call(mcp_call)", "assistant_message"}
				if got := describe(stored); !slices.Equal(got, want) {
					t.Errorf("session %v, want %v", got, want)
				}
				if string(stored[3].Raw()) != tc.response {
					t.Errorf("stored response %s", stored[3].Raw())
				}
			})
		}
	}
}

// checkNoDanglingCall fails if the session holds a call without its output.
func checkNoDanglingCall(t *testing.T, store session.Store, sid string) {
	t.Helper()
	items, err := store.List(context.Background(), sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if !it.Kind().IsCall() {
			continue
		}
		if !slices.ContainsFunc(items[i+1:], func(o state.Item) bool { return o.Kind().IsOutput() && o.CallID() == it.CallID() }) {
			t.Errorf("session holds %v without its output: %v", it, describe(items))
		}
	}
}

// TestMCPApprovalWithoutApprovalStage: with no approval stage, an MCP
// approval request is rejected (fail closed) and the model is told why.
func TestMCPApprovalWithoutApprovalStage(t *testing.T) {
	srv := newServer(t, mcpReplies(t)...)
	res, err := pipeline.NewRunner().Run(context.Background(), mcpAgent(srv.srv.URL), pipeline.UserInput("what is a turn?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted() || res.FinalOutput() != "Done and dusted." {
		t.Fatalf("interrupted %v, final %q", res.Interrupted(), res.FinalOutput())
	}
	var resp state.Item
	for _, it := range res.NewItems() {
		if it.Kind() == state.KindMCPApprovalResponse {
			resp = it
		}
	}
	if resp.IsZero() || resp.MCPApproved() || resp.CallID() != "mcpr_1" {
		t.Fatalf("response %v %s, want a rejection of mcpr_1", resp, resp.Raw())
	}
}
