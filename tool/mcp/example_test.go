package mcp_test

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/mcp"
)

// An MCP server's tools serve an agent like any other tools; here the
// server runs in-process over the go-sdk's in-memory transport.
func ExampleConnect() {
	ctx := context.Background()
	server := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "v1"}, nil)
	type args struct {
		Name string `json:"name"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, _ *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Wait()
	defer ss.Close()

	ts, err := mcp.Connect(ctx, []mcp.Server{{Name: "greeter", Transport: ct}})
	if err != nil {
		panic(err)
	}
	defer ts.Close()

	agent := &pipeline.Agent{
		Name:  "assistant",
		Tools: ts.Tools(),
		Model: scripted.New(scripted.CallTool("greet", `{"name":"Ada"}`), scripted.Reply("Greeted.")),
	}
	// Every call to the greeter server's tools waits for a human.
	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(mcp.FromServers("greeter"))))
	res, err := runner.Run(ctx, agent, pipeline.UserInput("Greet Ada."))
	if err != nil {
		panic(err)
	}
	fmt.Println("pending:", res.Interruptions()[0].Tool)
	run := res.State()
	if err := run.Approve(res.Interruptions()[0].CallID); err != nil {
		panic(err)
	}
	res, err = runner.Resume(ctx, agent, run)
	if err != nil {
		panic(err)
	}
	for _, it := range res.NewItems() {
		if it.Kind() == state.KindToolOutput {
			fmt.Println("output:", it.Text())
		}
	}
	fmt.Println("final:", res.FinalOutput())
	// Output:
	// pending: greet
	// output: Hello, Ada!
	// final: Greeted.
}
