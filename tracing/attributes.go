package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing/internal/genaiconv"
)

// The builders below run only when a span is recording.

func (m *middleware) providerName(a *pipeline.Agent) string {
	if a != nil {
		if p, ok := a.Model.(ProviderNamer); ok {
			if name := p.ProviderName(); name != "" {
				return name
			}
		}
	}
	return m.cfg.provider
}

func (m *middleware) runAttributes(ctx context.Context, c *pipeline.RunCall) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		genaiconv.OperationNameInvokeAgent,
		genaiconv.AgentNameKey.String(c.Agent.Name),
		genaiconv.RunIDKey.String(c.Run.ID()),
		genaiconv.RunResumedKey.Bool(c.Resumed),
		genaiconv.RequestStreamKey.Bool(c.Streaming()),
	)
	if p := m.providerName(c.Agent); p != "" {
		attrs = append(attrs, genaiconv.ProviderNameKey.String(p))
	}
	if model := c.Agent.Settings.Model; model != "" {
		attrs = append(attrs, genaiconv.RequestModelKey.String(model))
	}
	if id := conversationID(ctx, c.Run); id != "" {
		attrs = append(attrs, genaiconv.ConversationIDKey.String(id))
	}
	return attrs
}

// conversationKey is the context key of the session ID of the run a
// nested run runs in.
type conversationKey struct{}

// withConversation returns ctx carrying run's session ID (or the one ctx
// carries already) for the runs nested in it.
func withConversation(ctx context.Context, run *state.Run) context.Context {
	if id := run.SessionID(); id != "" && id != ctx.Value(conversationKey{}) {
		return context.WithValue(ctx, conversationKey{}, id)
	}
	return ctx
}

// conversationID returns the conversation a run belongs to: its session
// ID or, for a nested run (an agent used as a tool, which has no session
// of its own), the session ID of the run it is nested in.
func conversationID(ctx context.Context, run *state.Run) string {
	if id := run.SessionID(); id != "" {
		return id
	}
	id, _ := ctx.Value(conversationKey{}).(string)
	return id
}

// runOutcome describes how a run (or resumption) ended: its outcome, the
// turns it reached and the usage of this invocation (the state's totals
// minus those it started with).
func runOutcome(run *state.Run, res *pipeline.Result, err error, before state.Usage) []attribute.KeyValue {
	outcome := "final_output"
	switch {
	case err != nil:
		outcome = "error"
	case res != nil && res.Interrupted():
		outcome = "interrupted"
	}
	u := run.Usage()
	return []attribute.KeyValue{
		genaiconv.RunOutcomeKey.String(outcome),
		genaiconv.RunTurnsKey.Int(run.Turn()),
		genaiconv.UsageInputTokensKey.Int64(u.InputTokens - before.InputTokens),
		genaiconv.UsageOutputTokensKey.Int64(u.OutputTokens - before.OutputTokens),
	}
}

func turnAttributes(t *pipeline.Turn) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		genaiconv.TurnNumberKey.Int(t.Number),
		genaiconv.AgentNameKey.String(t.Agent.Name),
		genaiconv.TurnResumedKey.Bool(t.Resumed),
	}
	if t.Next.Kind != 0 {
		attrs = append(attrs, genaiconv.TurnNextKey.String(t.Next.Kind.String()))
	}
	return attrs
}

func (m *middleware) requestAttributes(ctx context.Context, c *pipeline.ModelCall) []attribute.KeyValue {
	s := c.Settings
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		genaiconv.OperationNameChat,
		genaiconv.OutputTypeText,
		genaiconv.RequestStreamKey.Bool(c.Stream),
		genaiconv.AgentNameKey.String(c.Agent.Name),
	)
	if p := m.providerName(c.Agent); p != "" {
		attrs = append(attrs, genaiconv.ProviderNameKey.String(p))
	}
	if s.Model != "" {
		attrs = append(attrs, genaiconv.RequestModelKey.String(s.Model))
	}
	if s.Temperature != nil {
		attrs = append(attrs, genaiconv.RequestTemperatureKey.Float64(*s.Temperature))
	}
	if s.TopP != nil {
		attrs = append(attrs, genaiconv.RequestTopPKey.Float64(*s.TopP))
	}
	if s.MaxOutputTokens != nil {
		attrs = append(attrs, genaiconv.RequestMaxTokensKey.Int64(*s.MaxOutputTokens))
	}
	if c.Turn != nil {
		if id := conversationID(ctx, c.Turn.Run); id != "" {
			attrs = append(attrs, genaiconv.ConversationIDKey.String(id))
		}
	}
	return attrs
}

func responseAttributes(r *pipeline.ModelResponse) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 7)
	if r.ID != "" {
		attrs = append(attrs, genaiconv.ResponseIDKey.String(r.ID))
	}
	if r.Model != "" {
		attrs = append(attrs, genaiconv.ResponseModelKey.String(r.Model))
	}
	attrs = append(attrs,
		genaiconv.UsageInputTokensKey.Int64(r.Usage.InputTokens),
		genaiconv.UsageOutputTokensKey.Int64(r.Usage.OutputTokens),
	)
	if r.Usage.ReasoningTokens > 0 {
		attrs = append(attrs, genaiconv.UsageReasoningOutputTokensKey.Int64(r.Usage.ReasoningTokens))
	}
	if r.Usage.CachedTokens > 0 {
		attrs = append(attrs, genaiconv.UsageCacheReadInputTokensKey.Int64(r.Usage.CachedTokens))
	}
	if r.Usage.CacheWriteTokens > 0 {
		attrs = append(attrs, genaiconv.UsageCacheCreationInputTokensKey.Int64(r.Usage.CacheWriteTokens))
	}
	if r.ContinuationLost != "" {
		attrs = append(attrs, genaiconv.ContinuationLostKey.String(r.ContinuationLost))
	}
	return attrs
}

// requestContent is the captured content of a model call: the system
// instructions, the input messages and the tool definitions.
func requestContent(c *pipeline.ModelCall) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 3)
	if c.Instructions != "" {
		b, _ := json.Marshal([]part{{Type: "text", Content: c.Instructions}})
		attrs = append(attrs, genaiconv.SystemInstructionsKey.String(string(b)))
	}
	attrs = append(attrs, genaiconv.InputMessagesKey.String(messagesJSON(c.Input)))
	if len(c.Tools) > 0 {
		defs := make([]toolDef, len(c.Tools))
		for i, t := range c.Tools {
			defs[i] = toolDef{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		}
		b, _ := json.Marshal(defs)
		attrs = append(attrs, genaiconv.ToolDefinitionsKey.String(string(b)))
	}
	return attrs
}

func (m *middleware) toolAttributes(c *pipeline.ToolCall, res *pipeline.ToolResult) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		genaiconv.OperationNameExecuteTool,
		genaiconv.ToolNameKey.String(c.Name),
		genaiconv.ToolCallIDKey.String(c.CallID),
		genaiconv.ToolTypeFunction,
		genaiconv.ToolTerminalKey.Bool(c.Terminal),
	)
	if c.Turn != nil && c.Turn.Agent != nil {
		attrs = append(attrs, genaiconv.AgentNameKey.String(c.Turn.Agent.Name))
	}
	if c.Tool != nil {
		if d := c.Tool.Spec().Description; d != "" {
			attrs = append(attrs, genaiconv.ToolDescriptionKey.String(d))
		}
	}
	if res != nil {
		attrs = append(attrs, genaiconv.ToolStatusKey.String(res.Status.String()))
	}
	if m.cfg.content {
		attrs = append(attrs, genaiconv.ToolCallArgumentsKey.String(c.Arguments))
		if res != nil && res.Status != pipeline.ToolPending {
			attrs = append(attrs, genaiconv.ToolCallResultKey.String(res.Output))
		}
	}
	return attrs
}

// A message and its parts follow the GenAI conventions' JSON form of
// gen_ai.input.messages and gen_ai.output.messages.
type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type toolDef struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// messagesJSON renders items as GenAI messages; consecutive items of one
// role share a message.
func messagesJSON(items state.Items) string {
	msgs := make([]message, 0, items.Len())
	add := func(role string, p part) {
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Parts = append(msgs[n-1].Parts, p)
			return
		}
		msgs = append(msgs, message{Role: role, Parts: []part{p}})
	}
	for _, it := range items.All() {
		switch it.Kind() {
		case state.KindUserMessage:
			add("user", part{Type: "text", Content: it.Text()})
		case state.KindSystemMessage:
			add("system", part{Type: "text", Content: it.Text()})
		case state.KindAssistantMessage:
			add("assistant", part{Type: "text", Content: it.Text()})
		case state.KindReasoning:
			add("assistant", part{Type: "reasoning", Content: it.Text()})
		case state.KindToolCall, state.KindHandoffCall:
			var args json.RawMessage
			if json.Valid([]byte(it.Text())) {
				args = json.RawMessage(it.Text())
			}
			add("assistant", part{Type: "tool_call", ID: it.CallID(), Name: it.Name(), Arguments: args})
		case state.KindToolOutput, state.KindHandoffOutput:
			add("tool", part{Type: "tool_call_response", ID: it.CallID(), Response: it.Text()})
		}
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		handleErr(fmt.Errorf("tracing: render messages: %w", err))
		return "[]"
	}
	return string(b)
}

// An errorTyper names its own error.type, as otel's semconv ErrorType
// function asks.
type errorTyper interface {
	error
	ErrorType() string
}

// errorType returns a low-cardinality name for err's kind, for error.type:
// the value of an ErrorType() string method in its chain; "canceled" or
// "deadline_exceeded" for context errors; "input_rejected",
// "output_rejected", "guardrail_failed" or "max_turns" for the pipeline's
// verdicts; else its Go type.
func errorType(err error) string {
	if et, ok := errors.AsType[errorTyper](err); ok {
		if s := et.ErrorType(); s != "" {
			return s
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, pipeline.ErrInputRejected):
		return "input_rejected"
	case errors.Is(err, pipeline.ErrOutputRejected):
		return "output_rejected"
	case errors.Is(err, pipeline.ErrGuardrailFailed):
		return "guardrail_failed"
	case errors.Is(err, pipeline.ErrMaxTurns):
		return "max_turns"
	}
	// Look through fmt.Errorf("...: %w", err) wrappers to the cause.
	for fmt.Sprintf("%T", err) == "*fmt.wrapError" {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	return fmt.Sprintf("%T", err)
}
