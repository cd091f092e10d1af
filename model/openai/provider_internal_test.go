package openai

import (
	"strings"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// TestOtherProvidersItemsLeftOut: the reasoning and opaque items that
// model/anthropic and model/gemini keep for their own providers are left
// out of a Responses request (they stay in the session); OpenAI's own
// reasoning and a user message are sent.
func TestOtherProvidersItemsLeftOut(t *testing.T) {
	mustParse := func(k state.Kind, raw string) state.Item {
		t.Helper()
		it, err := state.ParseItem(k, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	items := []state.Item{
		state.UserMessage("hi"),
		mustParse(state.KindReasoning, `{"type":"reasoning","id":"","summary":[],"anthropic":{"type":"thinking","thinking":"t","signature":"s"}}`),
		mustParse(state.KindReasoning, `{"type":"reasoning","id":"","summary":[],"gemini":{"thought":true,"text":"g","thoughtSignature":"c2ln"}}`),
		mustParse(state.KindOpaque, `{"type":"gemini.executableCode","gemini":{"executableCode":{"code":"print(1)"}}}`),
		state.Reasoning("rs_1", "mine"),
	}
	got := string(appendInput(nil, state.ItemsOf(items)))
	for _, gone := range []string{`"anthropic"`, `"gemini"`} {
		if strings.Contains(got, gone) {
			t.Errorf("input %s holds %s items", got, gone)
		}
	}
	if !strings.Contains(got, `"hi"`) || !strings.Contains(got, `"rs_1"`) {
		t.Errorf("input %s lacks the user message or OpenAI's reasoning", got)
	}
}
