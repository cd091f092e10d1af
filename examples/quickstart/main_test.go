package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The test checks the scripted model's output: never reach OpenAI from it.
func TestMain(m *testing.M) {
	os.Unsetenv("OPENAI_API_KEY")
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "agent.db")); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"1 user_message      What's the weather in Oslo, in Fahrenheit?",
		"3 tool_call         get_weather {\"city\":\"Oslo\"}",
		`4 tool_output       get_weather {"city":"Oslo","celsius":18,"sky":"clear","forecast":"dry all week"}`,
		"7 tool_output       convert_temperature 64.4°F",
		"turn 3",
		"tool convert_temperature",
		"stored in agent.db: the session holds 8 items",
		"final output: Oslo is clear and 18°C (64.4°F), dry all week.",
		"go run github.com/turnkit/turnkit/cmd/turnkit -db ", // the command that opens it
		"agent.db show quickstart",
		"agent.db serve",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// Items are printed in position order.
	if i, j := strings.Index(got, " 4 tool_output"), strings.Index(got, " 5 assistant_message"); i < 0 || j < i {
		t.Errorf("items out of order:\n%s", got)
	}
}
