package openai_test

import (
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/turnkit/turnkit/model/openai"
)

// Both adapters tell tracing which GenAI provider they are, so spans carry
// gen_ai.provider.name without tracing.WithProviderName. The interface is
// tracing's (tracing.ProviderNamer); model/openai must not import tracing.
func TestProviderName(t *testing.T) {
	type providerNamer interface{ ProviderName() string }
	client := sdk.NewClient()
	for name, m := range map[string]any{"responses": openai.New(client), "chat": openai.NewChat(client)} {
		p, ok := m.(providerNamer)
		if !ok {
			t.Fatalf("%s model has no ProviderName method", name)
		}
		if got := p.ProviderName(); got != "openai" {
			t.Errorf("%s model ProviderName() = %q, want %q", name, got, "openai")
		}
	}
}
