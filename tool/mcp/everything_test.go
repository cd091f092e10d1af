package mcp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool/mcp"
)

// everything returns the node binary and the reference server's entry
// point, installed by `npm ci` in testdata/everything. Without them the
// test is skipped, or fails under CI or TURNKIT_REQUIRE_BACKENDS=1
// (testenv.Missing).
func everything(t *testing.T) (node, entry string) {
	t.Helper()
	missing := func(what string) {
		testenv.Missing(t, what+" is missing; run npm ci in tool/mcp/testdata/everything (CI must install it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	entry, err = filepath.Abs("testdata/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		missing("@modelcontextprotocol/server-everything")
	}
	return node, entry
}

func stdioEverything(t *testing.T) mcp.Server {
	node, entry := everything(t)
	return mcp.Server{Name: "everything", Command: &mcp.Command{Path: node, Args: []string{entry, "stdio"}, TerminateGrace: 2 * time.Second}}
}

// httpEverything starts the reference server's streamable HTTP transport
// on a free loopback port and stops it when the test ends.
func httpEverything(t *testing.T) mcp.Server {
	node, entry := everything(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(node, entry, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				close(ready)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("the reference server did not start listening")
	}
	return mcp.Server{Name: "everything", HTTP: &mcp.HTTP{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}}
}

func connect(t *testing.T, servers []mcp.Server, opts ...mcp.Option) *mcp.Toolset {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, err := mcp.Connect(ctx, servers, opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ts
}

func find(t *testing.T, tools []pipeline.Tool, name string) pipeline.Tool {
	t.Helper()
	for _, x := range tools {
		if x.Spec().Name == name {
			return x
		}
	}
	t.Fatalf("no tool %q among %v", name, names(tools))
	return nil
}

func names(tools []pipeline.Tool) []string {
	var out []string
	for _, x := range tools {
		out = append(out, x.Spec().Name)
	}
	return out
}

func callOf(name, args string) *pipeline.ToolCall {
	return &pipeline.ToolCall{Name: name, CallID: "call_1", Arguments: args}
}

func TestEverything(t *testing.T) {
	t.Parallel()
	for _, tr := range []struct {
		name   string
		server func(*testing.T) mcp.Server
	}{
		{name: "stdio", server: stdioEverything},
		{name: "streamable http", server: httpEverything},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			changed := make(chan struct{}, 8)
			ts := connect(t, []mcp.Server{tr.server(t)}, mcp.WithToolsChanged(func() { changed <- struct{}{} }))
			tools := ts.Tools()
			for _, want := range []string{"echo", "get-sum", "get-tiny-image", "get-structured-content", "trigger-long-running-operation"} {
				find(t, tools, want)
			}
			t.Run("list", func(t *testing.T) {
				spec := find(t, tools, "echo").Spec()
				if spec.Description != "Echoes back the input string" || !strings.Contains(string(spec.Parameters), `"message"`) {
					t.Errorf("echo spec %+v", spec)
				}
			})
			tests := []struct {
				name, tool, args string
				want             []string
			}{
				{name: "echo", tool: "echo", args: `{"message":"hi"}`, want: []string{"Echo: hi"}},
				{name: "add", tool: "get-sum", args: `{"a":2,"b":3}`, want: []string{"The sum of 2 and 3 is 5."}},
				{name: "image", tool: "get-tiny-image", args: `{}`, want: []string{
					"Here's the image you requested:", `"type":"image"`, `"mimeType":"image/png"`, `"bytes":`, "The image above is the MCP logo."}},
				{name: "structured", tool: "get-structured-content", args: `{"location":"Chicago"}`, want: []string{`"conditions":"Light rain / drizzle"`}},
				{name: "embedded resource", tool: "get-resource-reference", args: `{"resourceType":"Text","resourceId":2}`, want: []string{`"type":"resource"`, `"uri":"demo://resource/dynamic/text/2"`}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					out, err := find(t, tools, tt.tool).Call(context.Background(), callOf(tt.tool, tt.args))
					if err != nil {
						t.Fatalf("Call: %v", err)
					}
					for _, w := range tt.want {
						if !strings.Contains(out, w) {
							t.Errorf("output %q lacks %q", out, w)
						}
					}
				})
			}
			t.Run("structured content once", func(t *testing.T) {
				out, _ := find(t, tools, "get-structured-content").Call(context.Background(), callOf("get-structured-content", `{"location":"Chicago"}`))
				if n := strings.Count(out, "humidity"); n != 1 {
					t.Errorf("output %q shows the structured content %d times, want once", out, n)
				}
			})
			t.Run("bad arguments", func(t *testing.T) {
				_, err := find(t, tools, "get-sum").Call(context.Background(), callOf("get-sum", `{"a":"two"}`))
				// The server reports invalid input as an isError result.
				var te *mcp.ToolError
				if !errors.As(err, &te) || !errors.Is(err, mcp.ErrToolFailed) || !strings.Contains(te.Output, "-32602") {
					t.Fatalf("Call = %v, want a *ToolError with the server's validation message", err)
				}
			})
			t.Run("long running cancelled", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := find(t, tools, "trigger-long-running-operation").Call(ctx, callOf("trigger-long-running-operation", `{"duration":30,"steps":30}`))
				var e *mcp.Error
				if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &e) || e.Tool != "trigger-long-running-operation" {
					t.Fatalf("Call = %v, want an *Error wrapping context.DeadlineExceeded", err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("cancelled call returned after %v", d)
				}
				// The session goes on.
				if out, err := find(t, tools, "echo").Call(context.Background(), callOf("echo", `{"message":"after"}`)); err != nil || out != "Echo: after" {
					t.Errorf("echo after a cancelled call = %q, %v", out, err)
				}
			})
			t.Run("list changed", func(t *testing.T) {
				// The reference server registers its task tool once the
				// session is initialized, and announces it with
				// notifications/tools/list_changed.
				select {
				case <-changed:
				case <-time.After(10 * time.Second):
					t.Fatal("no refresh after the server's list_changed")
				}
				if !slices.Contains(names(ts.Tools()), "simulate-research-query") {
					t.Errorf("tools after refresh %v lack simulate-research-query", names(ts.Tools()))
				}
			})
		})
	}
}
