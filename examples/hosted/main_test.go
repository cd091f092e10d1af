package main

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// The test checks the recorded responses' run: never reach OpenAI from it.
func TestMain(m *testing.M) {
	os.Unsetenv("OPENAI_API_KEY")
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := `approve mcp:deepwiki/ask_question {"repoName":"turnkit/turnkit","question":"What is a turn?"}
run_sql got: SELECT count(*) FROM turns;
session:
  user_message
  hosted_call            web_search_call
  hosted_call            mcp_list_tools
  mcp_approval_request   mcp:deepwiki/ask_question
  mcp_approval_response  mcp:deepwiki/ask_question
  hosted_call            mcp_call
  opaque                 hologram_call
  custom_call            run_sql
  custom_output          run_sql
  assistant_message
final output: A turn is one model call plus its tool calls; your database holds 42 of them.
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
