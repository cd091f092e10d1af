package state

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A remote MCP server that a hosted MCP tool names may ask for approval
// before it runs one of its tools: the model returns an
// mcp_approval_request, and the next request must carry the matching
// mcp_approval_response. The request is a call ([Kind.IsCall]) whose
// output is the response, so it follows the rules of function calls: it
// is held for a decision like one, and a session stores it only with its
// response.

// MCPApprovalName returns the name an MCP approval request goes by, for
// approvals and policies: "mcp:" + server + "/" + tool.
func MCPApprovalName(server, tool string) string { return "mcp:" + server + "/" + tool }

// SplitMCPApprovalName splits a name made by [MCPApprovalName] into the
// server label and the tool name; ok is false for any other name.
func SplitMCPApprovalName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp:")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "/")
}

// The text of an approval response that approved its request; a
// rejection's text is its reason.
const mcpApproved = "approved"

// parseMCPRequest parses an mcp_approval_request: its call ID is the
// request's "id", its name [MCPApprovalName] of its server and tool, its
// text the tool's JSON arguments.
func parseMCPRequest(raw []byte) (Item, error) {
	var v struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		ServerLabel string `json:"server_label"`
		Name        string `json:"name"`
		Arguments   string `json:"arguments"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, fmt.Errorf("state: parse %s item: %w", KindMCPApprovalRequest, err)
	}
	if v.Type != "mcp_approval_request" {
		return Item{}, fmt.Errorf("state: parse %s item: type %q, want \"mcp_approval_request\"", KindMCPApprovalRequest, v.Type)
	}
	if v.ID == "" || v.ServerLabel == "" || v.Name == "" {
		return Item{}, fmt.Errorf("state: parse %s item: missing id, server_label or name", KindMCPApprovalRequest)
	}
	return Item{kind: KindMCPApprovalRequest, callID: v.ID, name: MCPApprovalName(v.ServerLabel, v.Name),
		text: v.Arguments, raw: append([]byte(nil), raw...)}, nil
}

// parseMCPResponse parses an mcp_approval_response: its call ID is the
// request it answers, its text "approved" or the rejection's reason.
func parseMCPResponse(raw []byte) (Item, error) {
	var v struct {
		Type      string  `json:"type"`
		RequestID string  `json:"approval_request_id"`
		Approve   *bool   `json:"approve"`
		Reason    *string `json:"reason"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, fmt.Errorf("state: parse %s item: %w", KindMCPApprovalResponse, err)
	}
	if v.Type != "mcp_approval_response" {
		return Item{}, fmt.Errorf("state: parse %s item: type %q, want \"mcp_approval_response\"", KindMCPApprovalResponse, v.Type)
	}
	if v.RequestID == "" || v.Approve == nil {
		return Item{}, fmt.Errorf("state: parse %s item: missing approval_request_id or approve", KindMCPApprovalResponse)
	}
	text := mcpApproved
	if !*v.Approve {
		text = "rejected"
		if v.Reason != nil && *v.Reason != "" {
			text = *v.Reason
		}
	}
	return Item{kind: KindMCPApprovalResponse, callID: v.RequestID, text: text, raw: append([]byte(nil), raw...)}, nil
}

// MCPApprovalResponse returns the answer to the MCP approval request
// requestID, named name (the request's [MCPApprovalName]): approved, or
// rejected with reason (which may be empty).
func MCPApprovalResponse(requestID, name string, approve bool, reason string) Item {
	b := make([]byte, 0, 96+len(requestID)+len(reason))
	b = append(b, `{"type":"mcp_approval_response"`...)
	b = appendField(b, "approval_request_id", requestID)
	text := mcpApproved
	if approve {
		b = append(b, `,"approve":true`...)
	} else {
		b = append(b, `,"approve":false`...)
		text = "rejected"
		if reason != "" {
			b = appendField(b, "reason", reason)
			text = reason
		}
	}
	b = append(b, '}')
	return newItem(KindMCPApprovalResponse, requestID, name, text, b)
}

// MCPApproved reports whether it is an MCP approval response that
// approved its request.
func (it Item) MCPApproved() bool {
	if it.kind != KindMCPApprovalResponse {
		return false
	}
	var v struct {
		Approve bool `json:"approve"`
	}
	return json.Unmarshal(it.raw, &v) == nil && v.Approve
}
