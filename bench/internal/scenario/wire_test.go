package scenario_test

import (
	"testing"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// TestConversationBytesPerCall checks the conversation's bytes per model
// call on the wire: without chaining they grow with the history; with
// chaining across runs they do not; with compaction they stay under the
// threshold (4 bytes a token, the estimate's rule).
func TestConversationBytesPerCall(t *testing.T) {
	sizes := []int{20, 400}
	run := func(opts scenario.ConversationOptions) []scenario.Message {
		t.Helper()
		ms, err := scenario.Conversation(t.Context(), "memory", "persistence", sizes, 3, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Calls != 6 || m.CallBytes <= 0 || m.MaxCallBytes <= 0 {
				t.Fatalf("%+v at h=%d: %+v; want 6 calls of 3 messages measured", opts, m.History, m)
			}
		}
		return ms
	}
	whole := run(scenario.ConversationOptions{OpenAI: true})
	if whole[1].CallBytes < 10*whole[0].CallBytes {
		t.Errorf("without chaining: %.0f B per call at h=%d, %.0f B at h=%d: want them to grow with the history",
			whole[0].CallBytes, sizes[0], whole[1].CallBytes, sizes[1])
	}
	chained := run(scenario.ConversationOptions{Chain: true})
	if r := chained[1].CallBytes / chained[0].CallBytes; r > 1.2 {
		t.Errorf("chained: %.0f B per call at h=%d, %.0f B at h=%d (%.2f×): want within 1.2×",
			chained[0].CallBytes, sizes[0], chained[1].CallBytes, sizes[1], r)
	}
	const maxTokens = 1000
	compacted := run(scenario.ConversationOptions{Compact: maxTokens})
	for _, m := range compacted {
		if m.MaxCallBytes > 4*maxTokens {
			t.Errorf("compacted at %d tokens: a call sent %d B at h=%d, over %d", maxTokens, m.MaxCallBytes, m.History, 4*maxTokens)
		}
	}
}
