package genaiconv_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	sgenai "go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/turnkit/turnkit/tracing/internal/genaiconv"
)

// TestMatchesSemconv pins every GenAI key to the one semconv v1.41.0
// defines, the last version that had them.
func TestMatchesSemconv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give attribute.Key
		want attribute.Key
	}{
		{"operation name", genaiconv.OperationNameKey, semconv.GenAIOperationNameKey},
		{"provider name", genaiconv.ProviderNameKey, semconv.GenAIProviderNameKey},
		{"agent name", genaiconv.AgentNameKey, semconv.GenAIAgentNameKey},
		{"agent id", genaiconv.AgentIDKey, semconv.GenAIAgentIDKey},
		{"conversation id", genaiconv.ConversationIDKey, semconv.GenAIConversationIDKey},
		{"request model", genaiconv.RequestModelKey, semconv.GenAIRequestModelKey},
		{"temperature", genaiconv.RequestTemperatureKey, semconv.GenAIRequestTemperatureKey},
		{"top p", genaiconv.RequestTopPKey, semconv.GenAIRequestTopPKey},
		{"max tokens", genaiconv.RequestMaxTokensKey, semconv.GenAIRequestMaxTokensKey},
		{"stream", genaiconv.RequestStreamKey, semconv.GenAIRequestStreamKey},
		{"response id", genaiconv.ResponseIDKey, semconv.GenAIResponseIDKey},
		{"response model", genaiconv.ResponseModelKey, semconv.GenAIResponseModelKey},
		{"input tokens", genaiconv.UsageInputTokensKey, semconv.GenAIUsageInputTokensKey},
		{"output tokens", genaiconv.UsageOutputTokensKey, semconv.GenAIUsageOutputTokensKey},
		{"reasoning tokens", genaiconv.UsageReasoningOutputTokensKey, semconv.GenAIUsageReasoningOutputTokensKey},
		{"cache read tokens", genaiconv.UsageCacheReadInputTokensKey, semconv.GenAIUsageCacheReadInputTokensKey},
		{"cache creation tokens", genaiconv.UsageCacheCreationInputTokensKey, semconv.GenAIUsageCacheCreationInputTokensKey},
		{"output type", genaiconv.OutputTypeKey, semconv.GenAIOutputTypeKey},
		{"token type", genaiconv.TokenTypeKey, semconv.GenAITokenTypeKey},
		{"tool name", genaiconv.ToolNameKey, semconv.GenAIToolNameKey},
		{"tool call id", genaiconv.ToolCallIDKey, semconv.GenAIToolCallIDKey},
		{"tool type", genaiconv.ToolTypeKey, semconv.GenAIToolTypeKey},
		{"tool description", genaiconv.ToolDescriptionKey, semconv.GenAIToolDescriptionKey},
		{"tool arguments", genaiconv.ToolCallArgumentsKey, semconv.GenAIToolCallArgumentsKey},
		{"tool result", genaiconv.ToolCallResultKey, semconv.GenAIToolCallResultKey},
		{"tool definitions", genaiconv.ToolDefinitionsKey, semconv.GenAIToolDefinitionsKey},
		{"input messages", genaiconv.InputMessagesKey, semconv.GenAIInputMessagesKey},
		{"output messages", genaiconv.OutputMessagesKey, semconv.GenAIOutputMessagesKey},
		{"system instructions", genaiconv.SystemInstructionsKey, semconv.GenAISystemInstructionsKey},
		{"error type", genaiconv.ErrorTypeKey, semconv.ErrorTypeKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.give != tt.want {
				t.Fatalf("key = %q, semconv v1.41.0 has %q", tt.give, tt.want)
			}
		})
	}
}

func TestValuesMatchSemconv(t *testing.T) {
	t.Parallel()
	got := []attribute.KeyValue{
		genaiconv.OperationNameChat, genaiconv.OperationNameInvokeAgent, genaiconv.OperationNameExecuteTool,
		genaiconv.OutputTypeText, genaiconv.TokenTypeInput, genaiconv.TokenTypeOutput,
	}
	want := []attribute.KeyValue{
		semconv.GenAIOperationNameChat, semconv.GenAIOperationNameInvokeAgent, semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIOutputTypeText, semconv.GenAITokenTypeInput, semconv.GenAITokenTypeOutput,
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b attribute.Value) bool { return a.String() == b.String() })); diff != "" {
		t.Fatalf("values differ from semconv v1.41.0 (-want +got):\n%s", diff)
	}
	if genaiconv.ToolTypeFunction.Value.AsString() != "function" {
		t.Fatalf("tool type = %q, want function", genaiconv.ToolTypeFunction.Value.AsString())
	}
	if semconv.SchemaURL != genaiconv.SchemaURL {
		t.Fatalf("SchemaURL = %q, semconv v1.41.0 has %q", genaiconv.SchemaURL, semconv.SchemaURL)
	}
}

func TestMetricNamesMatchSemconv(t *testing.T) {
	t.Parallel()
	var d sgenai.ClientOperationDuration
	var u sgenai.ClientTokenUsage
	got := []string{genaiconv.ClientOperationDurationName, genaiconv.ClientOperationDurationUnit, genaiconv.ClientOperationDurationDesc,
		genaiconv.ClientTokenUsageName, genaiconv.ClientTokenUsageUnit, genaiconv.ClientTokenUsageDesc}
	want := []string{d.Name(), d.Unit(), d.Description(), u.Name(), u.Unit(), u.Description()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("metric instruments differ from semconv v1.41.0 (-want +got):\n%s", diff)
	}
}
