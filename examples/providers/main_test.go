package main

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// The test checks the recorded payloads' runs: never reach a provider.
func TestMain(m *testing.M) {
	for _, p := range providers {
		os.Unsetenv(p.env)
	}
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := `anthropic:
  user_message
  reasoning
  reasoning
  assistant_message
  tool_call          get_weather
  tool_output        get_weather
  assistant_message
  final output: It is sunny and 22C in Paris.
gemini:
  user_message
  reasoning
  reasoning
  tool_call          get_weather
  tool_output        get_weather
  assistant_message
  final output: It is sunny and 22C in Paris.
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
