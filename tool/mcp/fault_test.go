package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool/mcp"
)

var objectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// inProcess serves a go-sdk server set up by add over an in-memory
// transport and returns the Server that reaches it.
func inProcess(t testing.TB, name string, add func(s *sdk.Server)) mcp.Server {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "v0"}, nil)
	add(s)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ss.Close()
		_ = ss.Wait()
	})
	return mcp.Server{Name: name, Transport: ct}
}

func TestSlowServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		timeout  time.Duration // Server.Timeout
		cancelIn time.Duration // the caller cancels after this
		want     error
	}{
		{name: "server timeout", timeout: 100 * time.Millisecond, want: mcp.ErrTimeout},
		{name: "caller cancels", cancelIn: 100 * time.Millisecond, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cancelled := make(chan struct{})
			srv := inProcess(t, "slow", func(s *sdk.Server) {
				s.AddTool(&sdk.Tool{Name: "slow", InputSchema: objectSchema}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					select {
					case <-ctx.Done(): // notifications/cancelled arrived
						close(cancelled)
						return nil, ctx.Err()
					case <-time.After(10 * time.Second):
						return text("too late"), nil
					}
				})
			})
			srv.Timeout = tt.timeout
			ts := connect(t, []mcp.Server{srv})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelIn > 0 {
				time.AfterFunc(tt.cancelIn, cancel)
			}
			_, err := find(t, ts.Tools(), "slow").Call(ctx, callOf("slow", `{}`))
			var e *mcp.Error
			if !errors.Is(err, tt.want) || !errors.As(err, &e) || e.Server != "slow" || e.Tool != "slow" {
				t.Fatalf("Call = %v, want an *Error for server slow, tool slow, wrapping %v", err, tt.want)
			}
			select {
			case <-cancelled:
			case <-time.After(5 * time.Second):
				t.Error("the server's handler was not cancelled")
			}
		})
	}
}

func TestToolError(t *testing.T) {
	t.Parallel()
	srv := inProcess(t, "failing", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "fail", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil
		})
	})
	ts := connect(t, []mcp.Server{srv})
	_, err := find(t, ts.Tools(), "fail").Call(context.Background(), callOf("fail", `{}`))
	var te *mcp.ToolError
	if !errors.As(err, &te) || te.Output != "disk full" || te.Server != "failing" || !errors.Is(err, mcp.ErrToolFailed) {
		t.Fatalf("Call = %v, want a *ToolError with the output", err)
	}
}

func TestCrashMidCall(t *testing.T) {
	t.Parallel()
	// The server process dies while a call is in flight: its end of the
	// pipe closes before any answer. (A go-sdk handler that closes its own
	// session cannot stand in for this: Close waits for the handlers, and
	// the handler waits for a cancellation that may never come.)
	srv := rawServer(t, func(method string) string {
		switch method {
		case "initialize":
			return initResult
		case "tools/list":
			return `{"tools":[{"name":"crash","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			return crash
		}
		return `{}`
	})
	ts := connect(t, []mcp.Server{srv})
	_, err := find(t, ts.Tools(), "crash").Call(context.Background(), callOf("crash", `{}`))
	var e *mcp.Error
	if !errors.Is(err, mcp.ErrTransport) || !errors.As(err, &e) || e.Op != "call" {
		t.Fatalf("Call = %v, want an *Error wrapping ErrTransport", err)
	}
}

// crash, as an answer of rawServer, closes the server's end of the pipe
// without answering, as a server process that died would.
const crash = "\x00crash"

// rawServer answers JSON-RPC over pipes with answer, which gets each
// request's method and returns the result JSON, "" to say nothing, or
// crash to hang up.
func rawServer(t *testing.T, answer func(method string) string) mcp.Server {
	t.Helper()
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer sw.Close()
		sc := bufio.NewScanner(sr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
				continue
			}
			res := answer(req.Method)
			if res == crash {
				sr.Close() // the client's writes fail too
				return
			}
			if res != "" {
				if _, err := io.WriteString(sw, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+res+"}\n"); err != nil {
					return
				}
			}
		}
	}()
	t.Cleanup(func() {
		sr.Close()
		<-done
	})
	return mcp.Server{Name: "raw", Transport: &sdk.IOTransport{Reader: cr, Writer: cw}}
}

const initResult = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"v0"}}`

func TestMalformedResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		result string
	}{
		{name: "content not a list", result: `{"content":"nope"}`},
		{name: "unknown content type", result: `{"content":[{"type":"hologram"}]}`},
		{name: "not an object", result: `42`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := rawServer(t, func(method string) string {
				switch method {
				case "initialize":
					return initResult
				case "tools/list":
					return `{"tools":[{"name":"odd","inputSchema":{"type":"object"}}]}`
				case "tools/call":
					return tt.result
				}
				return `{}`
			})
			ts := connect(t, []mcp.Server{srv})
			_, err := find(t, ts.Tools(), "odd").Call(context.Background(), callOf("odd", `{}`))
			var e *mcp.Error
			if !errors.Is(err, mcp.ErrProtocol) || !errors.As(err, &e) || e.Tool != "odd" {
				t.Fatalf("Call = %v, want an *Error wrapping ErrProtocol", err)
			}
		})
	}
}

func TestNeverInitializes(t *testing.T) {
	t.Parallel()
	srv := rawServer(t, func(string) string { return "" })
	srv.ConnectTimeout = 200 * time.Millisecond
	ts, err := mcp.Connect(context.Background(), []mcp.Server{srv})
	var e *mcp.Error
	if ts != nil || !errors.Is(err, mcp.ErrTimeout) || !errors.As(err, &e) || e.Op != "connect" || e.Server != "raw" {
		t.Fatalf("Connect = %v, %v; want an *Error wrapping ErrTimeout at connect", ts, err)
	}
}

// helper returns a stdio Server that runs this test binary as an MCP
// server (see runHelperServer).
func helper(t *testing.T, env ...string) mcp.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Server{Name: "helper", Command: &mcp.Command{
		Path: exe, Env: append([]string{helperEnv + "=helper"}, env...), TerminateGrace: time.Second,
	}}
}

func TestStdioRestart(t *testing.T) {
	t.Parallel()
	t.Run("crash mid-call, not idempotent", func(t *testing.T) {
		t.Parallel()
		ts := connect(t, []mcp.Server{helper(t)})
		_, err := find(t, ts.Tools(), "crash").Call(context.Background(), callOf("crash", `{}`))
		var e *mcp.Error
		if !errors.Is(err, mcp.ErrServerExited) || !errors.As(err, &e) || !strings.Contains(err.Error(), "not sent again") {
			t.Fatalf("Call = %v, want an *Error wrapping ErrServerExited that says the call was not sent again", err)
		}
		// The server was restarted: a new process serves the next call.
		out, err := find(t, ts.Tools(), "count").Call(context.Background(), callOf("count", `{}`))
		if err != nil || out != "helper 1" {
			t.Fatalf("next call = %q, %v; want a fresh process's first answer", out, err)
		}
	})
	t.Run("crash mid-call, idempotent, sent again", func(t *testing.T) {
		t.Parallel()
		mark := filepath.Join(t.TempDir(), "crashed")
		ts := connect(t, []mcp.Server{helper(t, "TURNKIT_MCP_MARK="+mark)})
		out, err := find(t, ts.Tools(), "crash_idempotent").Call(context.Background(), callOf("crash_idempotent", `{}`))
		if err != nil || out != "served after restart" {
			t.Fatalf("Call = %q, %v; want the restarted server's answer", out, err)
		}
	})
	t.Run("exited between calls", func(t *testing.T) {
		t.Parallel()
		ts := connect(t, []mcp.Server{helper(t)})
		count := find(t, ts.Tools(), "count")
		if out, err := count.Call(context.Background(), callOf("count", `{}`)); err != nil || out != "helper 1" {
			t.Fatalf("first call = %q, %v", out, err)
		}
		out, err := find(t, ts.Tools(), "exit_after").Call(context.Background(), callOf("exit_after", `{}`))
		pid, perr := strconv.Atoi(strings.TrimPrefix(out, "bye "))
		if err != nil || perr != nil {
			t.Fatalf("exit_after = %q, %v; want bye and its process ID", out, err)
		}
		waitExit(t, pid) // the process exits between the calls
		// The next call goes to a fresh process. If the client has not
		// seen the exit yet, the SDK may take the request in flight and
		// report the broken pipe as a lost call (EOF): the call may then
		// have been read, for all the client can tell, so a tool that is
		// not idempotent is not sent again (at most once) and the error
		// says so; the process is restarted either way.
		out, err = count.Call(context.Background(), callOf("count", `{}`))
		if err != nil {
			if !errors.Is(err, mcp.ErrServerExited) || !strings.Contains(err.Error(), "not sent again") {
				t.Fatalf("call after the exit = %q, %v; want a fresh process's first answer, or a lost call not sent again", out, err)
			}
			out, err = count.Call(context.Background(), callOf("count", `{}`))
		}
		if err != nil || out != "helper 1" {
			t.Fatalf("call after the exit = %q, %v; want a fresh process's first answer", out, err)
		}
	})
	t.Run("crashes again", func(t *testing.T) {
		t.Parallel()
		// Idempotent and no mark file can be written: every process dies.
		ts := connect(t, []mcp.Server{helper(t, "TURNKIT_MCP_MARK="+filepath.Join(t.TempDir(), "no", "such", "dir"))})
		_, err := find(t, ts.Tools(), "crash_idempotent").Call(context.Background(), callOf("crash_idempotent", `{}`))
		if !errors.Is(err, mcp.ErrServerExited) {
			t.Fatalf("Call = %v, want ErrServerExited after one restart", err)
		}
	})
}

func TestListChanged(t *testing.T) {
	t.Parallel()
	var server *sdk.Server
	srv := inProcess(t, "growing", func(s *sdk.Server) {
		server = s
		s.AddTool(&sdk.Tool{Name: "first", Description: "v1", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("first"), nil
		})
	})
	changed := make(chan struct{}, 8)
	ts := connect(t, []mcp.Server{srv}, mcp.WithToolsChanged(func() { changed <- struct{}{} }))
	first := find(t, ts.Tools(), "first")
	wait := func() {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatal("no refresh after list_changed")
		}
	}
	server.AddTool(&sdk.Tool{Name: "second", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("second"), nil
	})
	wait()
	if got := names(ts.Tools()); strings.Join(got, ",") != "first,second" {
		t.Fatalf("tools after list_changed %v, want first,second", got)
	}
	server.AddTool(&sdk.Tool{Name: "first", Description: "v2", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("first v2"), nil
	})
	wait()
	if d := first.Spec().Description; d != "v2" {
		t.Errorf("a tool handed out before the change describes itself as %q, want v2", d)
	}
	if find(t, ts.Tools(), "first") != first {
		t.Error("a refresh replaced the tool instead of updating it")
	}
}

func TestRefreshKeepsToolsOnDuplicate(t *testing.T) {
	t.Parallel()
	var b *sdk.Server
	a := inProcess(t, "a", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "x", InputSchema: objectSchema}, nil)
	})
	bs := inProcess(t, "b", func(s *sdk.Server) {
		b = s
		s.AddTool(&sdk.Tool{Name: "y", InputSchema: objectSchema}, nil)
	})
	errs := make(chan error, 8)
	ts := connect(t, []mcp.Server{a, bs}, mcp.WithErrorHandler(func(err error) { errs <- err }))
	b.AddTool(&sdk.Tool{Name: "x", InputSchema: objectSchema}, nil)
	select {
	case err := <-errs:
		if !errors.Is(err, mcp.ErrDuplicateTool) {
			t.Errorf("reported %v, want ErrDuplicateTool", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no error reported for a refresh that duplicates a name")
	}
	if got := strings.Join(names(ts.Tools()), ","); got != "x,y" {
		t.Errorf("tools %s, want the previous x,y", got)
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	add := func(names ...string) func(*sdk.Server) {
		return func(s *sdk.Server) {
			for _, n := range names {
				s.AddTool(&sdk.Tool{Name: n, InputSchema: objectSchema}, nil)
			}
		}
	}
	t.Run("duplicate refused", func(t *testing.T) {
		t.Parallel()
		_, err := mcp.Connect(context.Background(), []mcp.Server{inProcess(t, "a", add("echo", "a_only")), inProcess(t, "b", add("echo"))})
		var de *mcp.DuplicateToolError
		if !errors.As(err, &de) || de.Name != "echo" || de.Servers != [2]string{"a", "b"} {
			t.Fatalf("Connect = %v, want a *DuplicateToolError naming echo on a and b", err)
		}
	})
	t.Run("server prefix", func(t *testing.T) {
		t.Parallel()
		ts := connect(t, []mcp.Server{inProcess(t, "a", add("echo", "fs.read")), inProcess(t, "b", add("echo"))}, mcp.WithServerPrefix())
		if got := strings.Join(names(ts.Tools()), ","); got != "a_echo,a_fs_read,b_echo" {
			t.Errorf("names %s", got)
		}
		tl := find(t, ts.Tools(), "a_fs_read").(*mcp.Tool)
		if tl.MCPName() != "fs.read" || tl.Server() != "a" {
			t.Errorf("a_fs_read is %q on %q", tl.MCPName(), tl.Server())
		}
	})
	t.Run("filters", func(t *testing.T) {
		t.Parallel()
		a := inProcess(t, "a", add("read_file", "write_file", "delete_file"))
		a.Allow, a.Deny = []string{"*_file"}, []string{"delete_*"}
		b := inProcess(t, "b", add("search"))
		ts := connect(t, []mcp.Server{a, b})
		tests := []struct {
			name string
			give []mcp.Filter
			want string
		}{
			{name: "server filters", want: "read_file,write_file,search"},
			{name: "agent allow", give: []mcp.Filter{mcp.Allow("read_*", "search")}, want: "read_file,search"},
			{name: "agent deny", give: []mcp.Filter{mcp.Deny("write_*")}, want: "read_file,search"},
			{name: "by server", give: []mcp.Filter{mcp.OnServers("b")}, want: "search"},
		}
		for _, tt := range tests {
			if got := strings.Join(names(ts.Tools(tt.give...)), ","); got != tt.want {
				t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
			}
		}
	})
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	_, ct := sdk.NewInMemoryTransports()
	tests := []struct {
		name string
		give []mcp.Server
	}{
		{name: "no name", give: []mcp.Server{{Transport: ct}}},
		{name: "no transport", give: []mcp.Server{{Name: "x"}}},
		{name: "two transports", give: []mcp.Server{{Name: "x", Transport: ct, HTTP: &mcp.HTTP{URL: "http://127.0.0.1:1/mcp"}}}},
		{name: "no command path", give: []mcp.Server{{Name: "x", Command: &mcp.Command{}}}},
		{name: "bad pattern", give: []mcp.Server{{Name: "x", Transport: ct, Allow: []string{"["}}}},
		{name: "same name twice", give: []mcp.Server{{Name: "x", Transport: ct}, {Name: "x", Transport: ct}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := mcp.Connect(context.Background(), tt.give)
			var ce *mcp.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, mcp.ErrInvalidServer) {
				t.Fatalf("Connect = %v, want a *ConfigError", err)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give mcp.Server
	}{
		{name: "no such command", give: mcp.Server{Name: "x", Command: &mcp.Command{Path: filepath.Join(t.TempDir(), "nope")}}},
		{name: "nothing listening", give: mcp.Server{Name: "x", HTTP: &mcp.HTTP{URL: "http://127.0.0.1:1/mcp"}, ConnectTimeout: 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := mcp.Connect(context.Background(), []mcp.Server{tt.give})
			var e *mcp.Error
			if !errors.As(err, &e) || e.Op != "connect" || e.Server != "x" {
				t.Fatalf("Connect = %v, want an *Error at connect", err)
			}
		})
	}
}

func TestStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		want   bool
	}{
		{name: "closed, all required", want: true,
			schema: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`},
		{name: "optional property", schema: `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`},
		{name: "open object", schema: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`},
		{name: "open nested object",
			schema: `{"type":"object","properties":{"a":{"type":"object","properties":{}}},"required":["a"],"additionalProperties":false}`},
		{name: "unsupported keyword",
			schema: `{"type":"object","properties":{"a":{"type":"string","default":"x"}},"required":["a"],"additionalProperties":false}`},
		{name: "empty closed", want: true, schema: `{"type":"object","properties":{},"additionalProperties":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := inProcess(t, "s", func(s *sdk.Server) {
				s.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(tt.schema)}, nil)
			})
			ts := connect(t, []mcp.Server{srv})
			spec := find(t, ts.Tools(), "t").Spec()
			if spec.Strict != tt.want {
				t.Errorf("Strict = %v, want %v", spec.Strict, tt.want)
			}
			var got, want any
			_ = json.Unmarshal(spec.Parameters, &got)
			_ = json.Unmarshal([]byte(tt.schema), &want)
			if !jsonEqual(got, want) {
				t.Errorf("Parameters %s, want the server's %s", spec.Parameters, tt.schema)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := inProcess(t, "s", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "t", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			calls.Add(1)
			return text("ok"), nil
		})
	})
	ts := connect(t, []mcp.Server{srv})
	for _, args := range []string{`[1]`, `{"a":`, `"x"`} {
		_, err := find(t, ts.Tools(), "t").Call(context.Background(), callOf("t", args))
		var ae *pipeline.ArgumentError
		if !errors.As(err, &ae) || ae.Tool != "t" {
			t.Errorf("Call(%s) = %v, want a *pipeline.ArgumentError", args, err)
		}
	}
	if out, err := find(t, ts.Tools(), "t").Call(context.Background(), callOf("t", ``)); err != nil || out != "ok" {
		t.Errorf("Call with empty arguments = %q, %v", out, err)
	}
	if calls.Load() != 1 {
		t.Errorf("the server was called %d times, want once", calls.Load())
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	srv := inProcess(t, "s", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "t", InputSchema: objectSchema}, nil)
	})
	ts, err := mcp.Connect(context.Background(), []mcp.Server{srv})
	if err != nil {
		t.Fatal(err)
	}
	tl := find(t, ts.Tools(), "t")
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := tl.Call(context.Background(), callOf("t", `{}`)); !errors.Is(err, mcp.ErrTransport) {
		t.Errorf("Call after Close = %v, want ErrTransport", err)
	}
}

func TestCallerOwnedSession(t *testing.T) {
	t.Parallel()
	srv := inProcess(t, "s", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "t", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("ok"), nil
		})
	})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "caller"}, nil).Connect(context.Background(), srv.Transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ts, err := mcp.Connect(context.Background(), []mcp.Server{{Name: "own", Session: cs}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	// The session is still the caller's, and open.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "t"}); err != nil {
		t.Errorf("the caller's session after Close: %v", err)
	}
}
