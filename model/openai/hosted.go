package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Hosted tools are tools the Responses API runs itself. An agent declares
// them among its Tools, with their options as openai-go's parameter types:
//
//	agent.Tools = append(agent.Tools,
//		openai.WebSearch(responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}),
//		openai.FileSearch(responses.FileSearchToolParam{VectorStoreIDs: []string{"vs_1"}, MaxNumResults: param.NewOpt[int64](5)}),
//		openai.MCP(responses.ToolMcpParam{ServerLabel: "deepwiki", ServerURL: param.NewOpt("https://mcp.deepwiki.com/mcp")}),
//	)
//
// The adapter sends each one in the request's tools as openai-go encodes
// it; the model's use of it comes back as hosted-call items
// ([state.KindHostedCall]), which the run records, stores and replays.
// The runner never calls a hosted tool. [ChatModel] cannot send them and
// fails the call with an error wrapping [ErrUnsupportedTool].

// WebSearch returns the hosted web search tool with the given options. A
// zero Type is set to "web_search".
func WebSearch(p responses.WebSearchToolParam) pipeline.Tool {
	if p.Type == "" {
		p.Type = responses.WebSearchToolTypeWebSearch
	}
	return HostedTool(responses.ToolUnionParam{OfWebSearch: &p})
}

// FileSearch returns the hosted file search tool over the given vector
// stores, with its filters, ranking and maximum number of results.
func FileSearch(p responses.FileSearchToolParam) pipeline.Tool {
	return HostedTool(responses.ToolUnionParam{OfFileSearch: &p})
}

// CodeInterpreter returns the hosted code interpreter tool; p.Container
// names a container or asks for an automatic one. A zero container is
// {"type":"auto"}.
func CodeInterpreter(p responses.ToolCodeInterpreterParam) pipeline.Tool {
	if p.Container == (responses.ToolCodeInterpreterContainerUnionParam{}) {
		p.Container.OfCodeInterpreterToolAuto = &responses.ToolCodeInterpreterContainerCodeInterpreterContainerAutoParam{}
	}
	return HostedTool(responses.ToolUnionParam{OfCodeInterpreter: &p})
}

// ImageGeneration returns the hosted image generation tool.
func ImageGeneration(p responses.ToolImageGenerationParam) pipeline.Tool {
	return HostedTool(responses.ToolUnionParam{OfImageGeneration: &p})
}

// MCP returns a remote MCP server as a hosted tool: its server label, its
// URL or connector, the tools it may use, the headers sent to it and which
// calls need approval (require_approval).
//
// A call the server asks approval for comes back as an MCP approval
// request ([state.KindMCPApprovalRequest]), named
// [state.MCPApprovalName] of the server and its tool ("mcp:deepwiki/ask"),
// with the tool's arguments. The runner treats it as a call of this tool,
// which always needs approval: with approval.Require in the chain the run
// pauses with the request pending; approving or rejecting it on the state
// (in any process) and resuming sends the mcp_approval_response. Without
// an approval stage the request is rejected (fail closed), and the model
// is told why.
func MCP(p responses.ToolMcpParam) pipeline.Tool {
	t := HostedTool(responses.ToolUnionParam{OfMcp: &p}).(*hostedTool)
	return &mcpTool{hostedTool: t}
}

// mcpTool is a remote MCP server: a hosted tool whose approval requests
// the tool stage answers.
type mcpTool struct{ *hostedTool }

var (
	_ pipeline.Tool             = (*mcpTool)(nil)
	_ pipeline.ApprovalRequirer = (*mcpTool)(nil)
)

// NeedsApproval reports that every approval request of the server needs
// a decision.
func (t *mcpTool) NeedsApproval(_ context.Context, c *pipeline.ToolCall) (bool, error) {
	return c.Item.Kind() == state.KindMCPApprovalRequest, nil
}

// Call answers an approval request the approval stage let through: it
// approves when the run holds an approval of the request, and otherwise
// fails, which rejects the request.
func (t *mcpTool) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	if c.Item.Kind() != state.KindMCPApprovalRequest {
		return t.hostedTool.Call(ctx, c)
	}
	if d, _, ok := c.Turn.Run.DecisionFor(c.Name, c.CallID); ok && d.Verdict == state.Approved {
		return "approved", nil
	}
	return "", fmt.Errorf("%w: MCP approval request %s (%s) was not approved: no approval stage decided it", ErrUnsupportedTool, c.CallID, c.Name)
}

// HostedTool returns a hosted tool from any tool declaration of the
// Responses API, for the ones without a helper of their own. Its name is
// the declaration's type ("mcp:" and the server label for a remote MCP
// server). HostedTool panics if the declaration does not encode to a JSON
// object with a type, or is a function tool (use [pipeline.NewTool]).
func HostedTool(p responses.ToolUnionParam) pipeline.Tool {
	raw, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("openai: hosted tool: %v", err))
	}
	var head struct {
		Type        string `json:"type"`
		ServerLabel string `json:"server_label"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.Type == "" {
		panic(fmt.Sprintf("openai: hosted tool %s has no type", raw))
	}
	if head.Type == "function" {
		panic("openai: HostedTool given a function tool; use pipeline.NewTool")
	}
	name := head.Type
	if head.Type == "mcp" {
		name = "mcp:" + head.ServerLabel
	}
	return &hostedTool{spec: pipeline.ToolSpec{Name: name, Hosted: raw}}
}

// hostedTool is a tool the API runs.
type hostedTool struct{ spec pipeline.ToolSpec }

var _ pipeline.Tool = (*hostedTool)(nil)

// Spec returns the tool's spec; its Hosted field is the declaration.
func (t *hostedTool) Spec() pipeline.ToolSpec {
	s := t.spec
	s.Hosted = append(json.RawMessage(nil), t.spec.Hosted...)
	return s
}

// Call reports that the API runs the tool: a function call with its name
// is a model error the runner reports.
func (t *hostedTool) Call(context.Context, *pipeline.ToolCall) (string, error) {
	return "", fmt.Errorf("%w: %s is run by the API, not called as a function", ErrUnsupportedTool, t.spec.Name)
}
