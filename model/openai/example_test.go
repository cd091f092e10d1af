package openai_test

import (
	"context"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
)

// The Responses API model, with the client's own retries. This example
// needs OPENAI_API_KEY and the network, so it is compiled, not run.
func ExampleNew() {
	client := sdk.NewClient(option.WithMaxRetries(3)) // reads OPENAI_API_KEY
	agent := &pipeline.Agent{
		Name:         "assistant",
		Instructions: "Answer in one sentence.",
		Model:        openai.New(client, openai.WithInclude("reasoning.encrypted_content")),
		Settings:     pipeline.ModelSettings{Model: "gpt-5-mini", ReasoningEffort: "low"},
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("Why is the sky blue?"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.FinalOutput())
}

// A Chat Completions model for an OpenAI-compatible server, streamed.
func ExampleNewChat() {
	client := sdk.NewClient(option.WithBaseURL("http://localhost:11434/v1/"), option.WithAPIKey("unused"))
	agent := &pipeline.Agent{
		Name:  "assistant",
		Model: openai.NewChat(client, openai.WithModel("llama3.2")),
	}
	for ev, err := range pipeline.NewRunner().Stream(context.Background(), agent, pipeline.UserInput("Hello!")) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if d, ok := ev.(pipeline.TextDelta); ok {
			fmt.Print(d.Delta)
		}
	}
	fmt.Println()
}
