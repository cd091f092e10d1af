package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/tool/mcp"
)

// helperEnv makes the test binary an MCP server over stdio (see
// runHelperServer), so that tests can crash a real process.
const helperEnv = "TURNKIT_MCP_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelperServer(mode)
		return
	}
	goleak.VerifyTestMain(m)
}

// runHelperServer serves tools over stdio: "echo" answers, "crash" exits
// the process mid-call, "count" reports how often this process served it.
func runHelperServer(mode string) {
	s := sdk.NewServer(&sdk.Implementation{Name: "helper", Version: "v0"}, nil)
	n := 0
	obj := json.RawMessage(`{"type":"object","properties":{}}`)
	s.AddTool(&sdk.Tool{Name: "crash", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	s.AddTool(&sdk.Tool{Name: "crash_idempotent", InputSchema: obj, Annotations: &sdk.ToolAnnotations{IdempotentHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if _, err := os.Stat(os.Getenv("TURNKIT_MCP_MARK")); err != nil {
				_ = os.WriteFile(os.Getenv("TURNKIT_MCP_MARK"), nil, 0o600)
				os.Exit(3) // the first process to serve it dies
			}
			return text("served after restart"), nil
		})
	s.AddTool(&sdk.Tool{Name: "count", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		n++
		return text(mode + " " + string(rune('0'+n))), nil
	})
	s.AddTool(&sdk.Tool{Name: "exit_after", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		time.AfterFunc(50*time.Millisecond, func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) })
		return text("bye " + strconv.Itoa(os.Getpid())), nil
	})
	// ask_twice asks two questions in turn, the way protocol 2026-07-28
	// has servers ask (multi round-trip requests): each answer comes in a
	// retry of the call, the answers so far in its request state. asked
	// counts the calls the client made (those without answers).
	var asked int
	s.AddTool(&sdk.Tool{Name: "ask_twice", InputSchema: obj}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
		questions := []string{"first?", "second?"}
		var answers []string
		if r, ok := req.Params.InputResponses["q"].(*sdk.ElicitResult); ok {
			if req.Params.RequestState != "" {
				answers = strings.Split(req.Params.RequestState, "\x1f")
			}
			if r.Action != "accept" {
				return text(questions[len(answers)] + " " + r.Action), nil
			}
			a, _ := r.Content["answer"].(string)
			answers = append(answers, a)
		} else {
			asked++
		}
		if len(answers) < len(questions) {
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{"q": &sdk.ElicitParams{Message: questions[len(answers)], RequestedSchema: schema}},
				RequestState:  strings.Join(answers, "\x1f"),
			}, nil
		}
		key, _ := req.Params.Meta[mcp.MetaIdempotencyKey].(string)
		return text("call " + strconv.Itoa(asked) + " of key " + key + ": " + strings.Join(answers, ", ")), nil
	})
	_ = s.Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0)
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}
