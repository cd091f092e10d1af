package pipeline

import (
	"context"
	"encoding/json"

	"github.com/turnkit/turnkit/state"
)

// A Tool is a function the model can call. The package tool builds typed
// tools from Go funcs; [NewTool] wraps a plain function.
//
// Call runs the tool with the call's JSON arguments and returns the output
// the model will see. An error is reported to the model as the output by
// default (see [WithToolErrorsAbort]). Call must honour ctx; tools with
// external effects should pass [ToolCall.IdempotencyKey] on, so that a retry
// after a crash is recognised downstream.
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, c *ToolCall) (string, error)
}

// A ContentTool is a [Tool] whose output may hold images and files as well
// as text, as content parts (see [state.ContentPart]). The runner calls
// CallContent instead of Call: when parts is non-nil, the call's output
// is the parts (a function_call_output whose output is a list of parts)
// and text is their text, joined ([state.JoinText]), which is what
// guardrails, logs and a terminal tool's final output see; when parts is
// nil, the output is text, as Call's would be. Call returns the text only.
// tool.Func and tool.Text tools whose func returns a tool.Content are
// ContentTools, and so are the tools of package tool/mcp.
type ContentTool interface {
	Tool
	CallContent(ctx context.Context, c *ToolCall) (text string, parts []state.ContentPart, err error)
}

// An ApprovalRequirer is a [Tool] that says whether a call needs a human
// approval before it runs. The approval middleware asks it; an error fails
// closed (the call needs approval).
type ApprovalRequirer interface {
	NeedsApproval(ctx context.Context, c *ToolCall) (bool, error)
}

// NewTool returns a Tool with the given spec that calls fn with the raw
// JSON arguments.
func NewTool(spec ToolSpec, fn func(ctx context.Context, args json.RawMessage) (string, error)) Tool {
	if fn == nil {
		panic("pipeline: NewTool called with a nil func")
	}
	if spec.Name == "" {
		panic("pipeline: NewTool called with an empty name")
	}
	if spec.Parameters == nil {
		spec.Parameters = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	}
	return &funcTool{spec: spec, fn: fn}
}

type funcTool struct {
	spec ToolSpec
	fn   func(ctx context.Context, args json.RawMessage) (string, error)
}

func (t *funcTool) Spec() ToolSpec { return t.spec }

func (t *funcTool) Call(ctx context.Context, c *ToolCall) (string, error) {
	return t.fn(ctx, json.RawMessage(c.Arguments))
}

// A ToolCall is the request of the tool stage: one call the model asked for.
// Middleware may read it; the runner owns it.
type ToolCall struct {
	// Turn is the turn the call belongs to.
	Turn *Turn
	// Tool is the tool the call names.
	Tool Tool
	// Item is the call item as the model produced it, with its position.
	Item state.Item
	// Name, CallID and Arguments repeat the item's fields. The arguments
	// of a custom tool's call are its freeform text input.
	Name      string
	CallID    string
	Arguments string
	// Index is the call's place among the calls of its response.
	Index int
	// OutputSeq is the position reserved for the call's output.
	OutputSeq int64
	// Terminal reports that the call's output may become the run's final
	// output (stop-on-first-tool, stop-at-names, a custom decider), so its
	// call and output are model output that waits for the output guardrails.
	Terminal bool
	// Resumed reports that the call runs on resume, after a decision.
	Resumed bool

	own *callState // the core's room for the call; nil in a ToolCall the core did not make
}

// A callState is what the core keeps for a call it made, allocated with
// it: the output item [ToolCall.ResultItem] made last, and the result the
// core's tool stage returns for a completed call (see [ToolHandler]).
type callState struct {
	memo     resultMemo
	result   ToolResult
	answered bool // its output was in the run before the tool stage (runCalls)
}

// A coreCall is a call the core made, beyond a turn's first (which lives
// in the turn), with its state: one allocation for both.
type coreCall struct {
	call ToolCall
	own  callState
}

// A resultMemo is the output item [ToolCall.ResultItem] made for a result
// of text output, and what it was made from.
type resultMemo struct {
	res    *ToolResult
	output string
	item   state.Item
}

// IdempotencyKey returns the key a tool with external effects passes on so
// that a retried call is recognised: the run ID and the call ID.
func (c *ToolCall) IdempotencyKey() string { return c.Turn.Run.ID() + "/" + c.CallID }

// Pending returns the result of a call that waits for a decision and did
// not run: status [ToolPending], kept in the call's own room when the core
// made the call, so holding a call allocates nothing. Like every result,
// it is valid while the turn is served (see [ToolHandler]); a call made
// outside the core gets a result of its own.
func (c *ToolCall) Pending() *ToolResult {
	if c.own == nil {
		return &ToolResult{Status: ToolPending}
	}
	c.own.result = ToolResult{Status: ToolPending}
	return &c.own.result
}

// outputItem returns the output item for the call with the given output,
// placed at the call's reserved position.
func (c *ToolCall) outputItem(output string) state.Item {
	if c.Item.Kind() == state.KindCustomCall {
		return state.CustomOutput(c.CallID, c.Name, output).WithSeq(c.OutputSeq)
	}
	return state.ToolOutput(c.CallID, c.Name, output).WithSeq(c.OutputSeq)
}

// contentItem returns the output item for the call whose output is the
// given content parts, placed at the call's reserved position.
func (c *ToolCall) contentItem(parts []state.ContentPart) state.Item {
	if c.Item.Kind() == state.KindCustomCall {
		return state.CustomOutputContent(c.CallID, c.Name, parts...).WithSeq(c.OutputSeq)
	}
	return state.ToolOutputContent(c.CallID, c.Name, parts...).WithSeq(c.OutputSeq)
}

// resultOutput returns the output item of a result: its content parts
// when it has them, else its output.
func (c *ToolCall) resultOutput(res *ToolResult) state.Item {
	if res.Content != nil {
		return c.contentItem(res.Content)
	}
	return c.outputItem(res.Output)
}

// ResultItem returns the output item for the call's result, placed at the
// call's reserved position: for a function or custom tool call, its
// output, made of its content parts when it has them
// ([ToolResult.Content]); for an MCP approval request, the approval
// response, which approves when the call completed without error and
// otherwise rejects with the output as its reason. It is the item the core
// records for the result.
//
// A call the core made remembers the item it made for a result with a
// text output, and returns it again while that result's output is the
// same, so the session and the core, which both ask, share one item
// (items are immutable) and its JSON is written once. Like the rest of a
// ToolCall, it is not for concurrent use.
func (c *ToolCall) ResultItem(res *ToolResult) state.Item {
	if c.Item.Kind() != state.KindMCPApprovalRequest {
		if res.Content != nil || c.own == nil {
			return c.resultOutput(res)
		}
		m := &c.own.memo
		if m.res != res || m.output != res.Output {
			*m = resultMemo{res: res, output: res.Output, item: c.outputItem(res.Output)}
		}
		return m.item
	}
	approve := res.Status == ToolCompleted && res.Err == nil
	reason := ""
	if !approve {
		reason = res.Output
	}
	return state.MCPApprovalResponse(c.CallID, c.Name, approve, reason).WithSeq(c.OutputSeq)
}

// A ToolStatus says what became of a tool call. The zero value is invalid.
type ToolStatus uint8

// The tool statuses.
const (
	// ToolCompleted: the tool ran (or a middleware answered for it); Output
	// is what the model sees.
	ToolCompleted ToolStatus = iota + 1
	// ToolRejected: the call did not run (a human or a guardrail rejected
	// it); Output is the message the model sees.
	ToolRejected
	// ToolPending: the call waits for a decision and did not run. The turn
	// ends in an interruption and the call has no output yet.
	ToolPending
)

// String returns "completed", "rejected" or "pending".
func (s ToolStatus) String() string {
	switch s {
	case ToolCompleted:
		return "completed"
	case ToolRejected:
		return "rejected"
	case ToolPending:
		return "pending"
	}
	return "ToolStatus(invalid)"
}

// A ToolResult is what the tool stage made of a call.
type ToolResult struct {
	Status ToolStatus
	// Output is what the model sees as the call's output. When Content is
	// set, it is the content's text, joined, for guardrails, logs and a
	// terminal tool's final output.
	Output string
	// Content, when non-nil, is what the model sees instead of Output: the
	// output as content parts (text, images, files), as a [ContentTool]
	// returns it. A middleware that replaces a result's output makes a new
	// result (or sets Content to nil), so that the parts do not outlive
	// the text they went with. Treat it as read-only: results are shared.
	Content []state.ContentPart
	// Err is the tool's own error when it was reported to the model as
	// Output; it is kept for tracing and logging.
	Err error
	// Elicitation, with ToolPending, is the MCP server's request for
	// input the call waits for (from an [*ElicitationError]); zero when
	// the call waits for an approval.
	Elicitation state.Elicitation
}
