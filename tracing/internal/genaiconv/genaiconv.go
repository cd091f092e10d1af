// Package genaiconv holds the OpenTelemetry GenAI semantic-convention keys
// turnkit's tracing uses. The GenAI keys left go.opentelemetry.io/otel/semconv
// in v1.42.0, so they are kept here, copied from semconv v1.41.0 (a test
// checks every one against that version), together with turnkit's own keys
// for what the conventions do not cover (turns, guardrails, approvals).
package genaiconv

import "go.opentelemetry.io/otel/attribute"

// SchemaURL is the schema of the semantic conventions the keys follow.
const SchemaURL = "https://opentelemetry.io/schemas/1.41.0"

// GenAI attribute keys (semantic conventions v1.41.0).
const (
	OperationNameKey              = attribute.Key("gen_ai.operation.name")
	ProviderNameKey               = attribute.Key("gen_ai.provider.name")
	AgentNameKey                  = attribute.Key("gen_ai.agent.name")
	AgentIDKey                    = attribute.Key("gen_ai.agent.id")
	ConversationIDKey             = attribute.Key("gen_ai.conversation.id")
	RequestModelKey               = attribute.Key("gen_ai.request.model")
	RequestTemperatureKey         = attribute.Key("gen_ai.request.temperature")
	RequestTopPKey                = attribute.Key("gen_ai.request.top_p")
	RequestMaxTokensKey           = attribute.Key("gen_ai.request.max_tokens")
	RequestStreamKey              = attribute.Key("gen_ai.request.stream")
	ResponseIDKey                 = attribute.Key("gen_ai.response.id")
	ResponseModelKey              = attribute.Key("gen_ai.response.model")
	UsageInputTokensKey           = attribute.Key("gen_ai.usage.input_tokens")
	UsageOutputTokensKey          = attribute.Key("gen_ai.usage.output_tokens")
	UsageReasoningOutputTokensKey = attribute.Key("gen_ai.usage.reasoning.output_tokens")
	UsageCacheReadInputTokensKey  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	OutputTypeKey                 = attribute.Key("gen_ai.output.type")
	TokenTypeKey                  = attribute.Key("gen_ai.token.type")
	ToolNameKey                   = attribute.Key("gen_ai.tool.name")
	ToolCallIDKey                 = attribute.Key("gen_ai.tool.call.id")
	ToolTypeKey                   = attribute.Key("gen_ai.tool.type")
	ToolDescriptionKey            = attribute.Key("gen_ai.tool.description")
	ToolCallArgumentsKey          = attribute.Key("gen_ai.tool.call.arguments")
	ToolCallResultKey             = attribute.Key("gen_ai.tool.call.result")
	ToolDefinitionsKey            = attribute.Key("gen_ai.tool.definitions")
	InputMessagesKey              = attribute.Key("gen_ai.input.messages")
	OutputMessagesKey             = attribute.Key("gen_ai.output.messages")
	SystemInstructionsKey         = attribute.Key("gen_ai.system_instructions")
	ErrorTypeKey                  = attribute.Key("error.type")
)

// UsageCacheCreationInputTokensKey is the input tokens written to the
// provider's prompt cache (semantic conventions v1.41.0).
const UsageCacheCreationInputTokensKey = attribute.Key("gen_ai.usage.cache_creation.input_tokens")

// Well-known attribute values (semantic conventions v1.41.0).
var (
	OperationNameChat        = OperationNameKey.String("chat")
	OperationNameInvokeAgent = OperationNameKey.String("invoke_agent")
	OperationNameExecuteTool = OperationNameKey.String("execute_tool")
	OutputTypeText           = OutputTypeKey.String("text")
	TokenTypeInput           = TokenTypeKey.String("input")
	TokenTypeOutput          = TokenTypeKey.String("output")
	ToolTypeFunction         = ToolTypeKey.String("function")
)

// GenAI metric instruments (semantic conventions v1.41.0).
const (
	ClientOperationDurationName = "gen_ai.client.operation.duration"
	ClientOperationDurationUnit = "s"
	ClientOperationDurationDesc = "GenAI operation duration."
	ClientTokenUsageName        = "gen_ai.client.token.usage"
	ClientTokenUsageUnit        = "{token}"
	ClientTokenUsageDesc        = "Number of input and output tokens used."
)

// DurationBuckets returns the bucket boundaries the conventions advise for
// gen_ai.client.operation.duration. Each call returns a new slice, so that
// no caller can change another's.
func DurationBuckets() []float64 {
	return []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
}

// TokenBuckets returns the advised boundaries of gen_ai.client.token.usage.
func TokenBuckets() []float64 {
	return []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
}

// turnkit's own keys, for what the GenAI conventions do not name.
const (
	RunIDKey            = attribute.Key("turnkit.run.id")
	RunResumedKey       = attribute.Key("turnkit.run.resumed")
	RunOutcomeKey       = attribute.Key("turnkit.run.outcome")
	RunTurnsKey         = attribute.Key("turnkit.run.turns")
	TurnNumberKey       = attribute.Key("turnkit.turn.number")
	TurnResumedKey      = attribute.Key("turnkit.turn.resumed")
	TurnNextKey         = attribute.Key("turnkit.turn.next")
	ToolStatusKey       = attribute.Key("turnkit.tool.status")
	ToolTerminalKey     = attribute.Key("turnkit.tool.terminal")
	GuardrailNameKey    = attribute.Key("turnkit.guardrail.name")
	GuardrailStageKey   = attribute.Key("turnkit.guardrail.stage")
	GuardrailTrippedKey = attribute.Key("turnkit.guardrail.tripped")
	GuardrailBehavior   = attribute.Key("turnkit.guardrail.behavior")
	GuardrailMessageKey = attribute.Key("turnkit.guardrail.message")
	ApprovalOutcomeKey  = attribute.Key("turnkit.approval.outcome")
	ApprovalAlwaysKey   = attribute.Key("turnkit.approval.always")
	ApprovalMessageKey  = attribute.Key("turnkit.approval.message")
	HandoffFromKey      = attribute.Key("turnkit.handoff.from")
	HandoffToKey        = attribute.Key("turnkit.handoff.to")
	LinkTypeKey         = attribute.Key("turnkit.link.type")
	ContinuationLostKey = attribute.Key("turnkit.continuation.lost")
	HostedTypeKey       = attribute.Key("turnkit.hosted.type")
	HostedStatusKey     = attribute.Key("turnkit.hosted.status")
	HostedServerKey     = attribute.Key("turnkit.hosted.server")
)

// turnkit's event names and metric instruments.
const (
	EventGuardrail        = "turnkit.guardrail"
	EventApprovalRequest  = "turnkit.approval.requested"
	EventApprovalDecision = "turnkit.approval.decision"
	EventHandoff          = "turnkit.handoff"
	EventHostedCall       = "turnkit.hosted_call"

	ToolCallsName      = "turnkit.tool.calls"
	ToolDurationName   = "turnkit.tool.duration"
	GuardrailTripsName = "turnkit.guardrail.trips"
	ApprovalsName      = "turnkit.approvals"
)
