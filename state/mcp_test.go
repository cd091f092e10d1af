package state_test

import (
	"testing"

	"github.com/turnkit/turnkit/state"
)

const mcpRequest = `{"id":"mcpr_1","type":"mcp_approval_request","server_label":"deepwiki","name":"ask_question","arguments":"{\"q\":\"what?\"}"}`

func TestMCPApprovalItems(t *testing.T) {
	req, err := state.ParseItem(state.KindMCPApprovalRequest, []byte(mcpRequest))
	if err != nil {
		t.Fatal(err)
	}
	if !req.Kind().IsCall() || req.CallID() != "mcpr_1" || req.Name() != "mcp:deepwiki/ask_question" || req.Text() != `{"q":"what?"}` {
		t.Errorf("request = %v %q", req, req.Text())
	}
	if server, tool, ok := state.SplitMCPApprovalName(req.Name()); !ok || server != "deepwiki" || tool != "ask_question" {
		t.Errorf("SplitMCPApprovalName(%q) = %q, %q, %v", req.Name(), server, tool, ok)
	}
	for _, tc := range []struct {
		approve bool
		reason  string
		raw     string
		text    string
	}{
		{true, "", `{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true}`, "approved"},
		{false, "", `{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":false}`, "rejected"},
		{false, "not <today>", `{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":false,"reason":"not \u003ctoday\u003e"}`, "not <today>"},
	} {
		resp := state.MCPApprovalResponse("mcpr_1", req.Name(), tc.approve, tc.reason)
		if string(resp.Raw()) != tc.raw || resp.Text() != tc.text || resp.MCPApproved() != tc.approve || !resp.Kind().IsOutput() || resp.CallID() != "mcpr_1" {
			t.Errorf("MCPApprovalResponse(%v, %q) = %s %q", tc.approve, tc.reason, resp.Raw(), resp.Text())
		}
		back, err := state.ParseItem(state.KindMCPApprovalResponse, resp.Raw())
		if err != nil || !back.WithName(req.Name()).Equal(resp) || back.Text() != resp.Text() {
			t.Errorf("ParseItem(%s) = %v, %v", resp.Raw(), back, err)
		}
	}
	if _, ok := req.WithKind(state.KindHandoffCall); ok {
		t.Error("an MCP approval request became a handoff call")
	}
	for _, bad := range []string{
		`{"id":"mcpr_1","type":"mcp_approval_request","name":"ask"}`,
		`{"type":"mcp_approval_request","server_label":"s","name":"ask"}`,
		`{"id":"x","type":"function_call","server_label":"s","name":"ask"}`,
	} {
		if _, err := state.ParseItem(state.KindMCPApprovalRequest, []byte(bad)); err == nil {
			t.Errorf("ParseItem(request, %s) = nil error", bad)
		}
	}
	if _, err := state.ParseItem(state.KindMCPApprovalResponse, []byte(`{"type":"mcp_approval_response","approval_request_id":"x"}`)); err == nil {
		t.Error("a response without approve parsed")
	}
	if _, err := state.ParseItem(state.KindHostedCall, []byte(mcpRequest)); err == nil {
		t.Error("an approval request parsed as a hosted call")
	}
}

// TestMCPApprovalCheckpoint: a run paused on an MCP approval request
// round-trips with its pending approval, and its response after it.
func TestMCPApprovalCheckpoint(t *testing.T) {
	r := state.NewRun("run-mcp", "agent")
	r.SetMaxTurns(10)
	r.AddInput(state.UserMessage("ask"))
	req, _ := state.ParseItem(state.KindMCPApprovalRequest, []byte(mcpRequest))
	first := r.Reserve(2)
	req = req.WithSeq(first)
	if err := r.Record(req); err != nil {
		t.Fatal(err)
	}
	r.SetResponse(state.Boundary{Start: first, End: first + 1, OutputsEnd: first + 2})
	r.AddPending(state.Approval{Tool: req.Name(), CallID: req.CallID(), Arguments: req.Text(), Agent: "agent", Seq: first, OutputSeq: first + 1})
	b, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := state.Unmarshal(b)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if p := back.Pending(); len(p) != 1 || p[0].Tool != "mcp:deepwiki/ask_question" || p[0].CallID != "mcpr_1" {
		t.Fatalf("pending %+v", p)
	}
	out := state.MCPApprovalResponse("mcpr_1", req.Name(), true, "").WithSeq(first + 1)
	if err := back.Record(out); err != nil {
		t.Fatal(err)
	}
	back.ResolvePending("mcpr_1")
	b, err = state.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	again, err := state.Unmarshal(b)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	got, ok := again.Answered(req)
	if !ok || !got.Equal(out) || got.Name() != req.Name() || !got.MCPApproved() {
		t.Errorf("Answered = %v %v", got, ok)
	}
}
