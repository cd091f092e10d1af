// Command mcp runs an agent whose tools come from an MCP server: the
// reference server @modelcontextprotocol/server-everything, started over
// stdio with node. One of its tools (get-sum) needs a human approval: the
// run pauses, its checkpoint goes through JSON, the call is approved and
// the run resumes.
//
//	(cd tool/mcp/testdata/everything && npm ci)   # once
//	go run ./examples/mcp
//	go run ./examples/mcp -server /path/to/server-everything/dist/index.js
//
// It runs offline on a scripted model; node must be on PATH.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/mcp"
)

const defaultServer = "tool/mcp/testdata/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(w)
	server := fs.String("server", defaultServer, "the reference server's dist/index.js")
	if err := fs.Parse(args); err != nil {
		return err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return errors.New("node is not on PATH; this example runs the MCP reference server with it")
	}
	if _, err := os.Stat(*server); err != nil {
		return fmt.Errorf("no reference server at %s: run npm ci in tool/mcp/testdata/everything, or give -server", *server)
	}

	// The toolset starts the server and lists its tools; Close stops it.
	ts, err := mcp.Connect(ctx, []mcp.Server{{
		Name:    "everything",
		Command: &mcp.Command{Path: node, Args: []string{*server, "stdio"}},
		Allow:   []string{"echo", "get-sum", "get-tiny-image"},
	}})
	if err != nil {
		return err
	}
	defer ts.Close()
	for _, t := range ts.Tools() {
		fmt.Fprintf(w, "tool %s: %s\n", t.Spec().Name, t.Spec().Description)
	}

	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("get-sum"))))
	agent := &pipeline.Agent{
		Name:  "assistant",
		Tools: ts.Tools(),
		Model: scripted.New(
			scripted.Respond(
				scripted.Call("echo", `{"message":"hello from turnkit"}`),
				scripted.Call("get-sum", `{"a":2,"b":3}`),
				scripted.Call("get-tiny-image", `{}`),
			),
			scripted.Reply("2 + 3 = 5, and the server sent its logo."),
		),
	}
	res, err := runner.Run(ctx, agent, pipeline.UserInput("Echo a greeting, add 2 and 3, show the logo."))
	if err != nil {
		return err
	}
	printOutputs(w, res)
	for _, ap := range res.Interruptions() {
		fmt.Fprintf(w, "pending approval: %s %s\n", ap.Tool, ap.Arguments)
	}

	// The checkpoint could go anywhere; here it goes through JSON and back.
	data, err := state.Marshal(res.State())
	if err != nil {
		return err
	}
	st, err := state.Unmarshal(data)
	if err != nil {
		return err
	}
	for _, ap := range res.Interruptions() {
		if err := st.Approve(ap.CallID); err != nil {
			return err
		}
		fmt.Fprintf(w, "approved %s\n", ap.Tool)
	}
	res, err = runner.Resume(ctx, agent, st)
	if err != nil {
		return err
	}
	printOutputs(w, res)
	fmt.Fprintf(w, "final: %s\n", res.FinalOutput())
	return nil
}

// printOutputs prints the tool outputs a run recorded, one line each. An
// output made of content parts (an MCP tool that returned an image) is
// printed part by part, a non-text part as its type.
func printOutputs(w io.Writer, res *pipeline.Result) {
	for _, it := range res.NewItems() {
		if it.Kind() != state.KindToolOutput {
			continue
		}
		text := it.Text()
		if parts := it.Content(); parts != nil {
			shown := make([]string, len(parts))
			for i, p := range parts {
				shown[i] = p.Text()
				if p.Type() != "input_text" {
					shown[i] = "[" + p.Type() + "]"
				}
			}
			text = strings.Join(shown, " ")
		}
		fmt.Fprintf(w, "%s -> %s\n", it.Name(), strings.ReplaceAll(text, "\n", " | "))
	}
}
