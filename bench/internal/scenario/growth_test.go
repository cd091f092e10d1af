package scenario_test

import (
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// TestConversationCounts checks the accounting of the conversation
// scenario on memory and SQLite, with both chains: every message decodes
// the items written since the last message read the session, sends the
// history to the model, writes its four items, and with checkpoints writes
// more, through SaveAppend on SQLite (one store for both).
func TestConversationCounts(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Clean(t.TempDir()))
	for _, be := range []string{"memory", "sqlite"} {
		for _, chain := range scenario.GrowthChains() {
			ms, err := scenario.Conversation(t.Context(), be, chain, []int{10, 50}, 2, scenario.ConversationOptions{}, nil)
			if err != nil {
				t.Fatalf("%s/%s: %v", be, chain, err)
			}
			if len(ms) != 2 {
				t.Fatalf("%s/%s: %d sizes measured, want 2", be, chain, len(ms))
			}
			// The first message reads the session whole; from then on a
			// message decodes only what was written since the last read
			// (persistence's history cache): at 50 items, fewer than the
			// history per message.
			if m := ms[1]; m.Decoded <= 0 || m.Decoded >= float64(m.History) {
				t.Errorf("%s/%s at %d: %.1f items decoded per message, want some, fewer than the history", be, chain, m.History, m.Decoded)
			}
			for _, m := range ms {
				if m.ModelBytes <= 0 || m.Written <= 0 || m.Stored <= 0 || m.Time <= 0 {
					t.Errorf("%s/%s at %d: a figure is not measured: %+v", be, chain, m.History, m)
				}
			}
			if ms[1].ModelBytes <= ms[0].ModelBytes {
				t.Errorf("%s/%s: the model got %.0f B at h=50, %.0f B at h=10: want more", be, chain, ms[1].ModelBytes, ms[0].ModelBytes)
			}
		}
		alone, _ := scenario.Conversation(t.Context(), be, "persistence", []int{10}, 1, scenario.ConversationOptions{}, nil)
		cp, _ := scenario.Conversation(t.Context(), be, "checkpoint", []int{10}, 1, scenario.ConversationOptions{}, nil)
		if len(alone) == 1 && len(cp) == 1 && cp[0].Written <= alone[0].Written {
			t.Errorf("%s: a message writes %.0f B with checkpoints, %.0f B without: the saves are not counted", be, cp[0].Written, alone[0].Written)
		}
	}
}

// TestRunLong runs a short long run on memory with both chains.
func TestRunLong(t *testing.T) {
	for _, chain := range scenario.GrowthChains() {
		r, err := scenario.RunLong(t.Context(), "memory", chain, 40)
		if err != nil {
			t.Fatal(err)
		}
		if r.Turns != 40 || r.First <= 0 || r.Last <= 0 || r.Total < r.First {
			t.Errorf("%s: %+v", chain, r)
		}
	}
}
