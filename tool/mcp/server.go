package mcp

import (
	"io"
	"net/http"
	"path"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/pipeline"
)

// A Server says how to reach one MCP server and which of its tools to
// offer. Set exactly one of Command, HTTP, Transport and Session.
type Server struct {
	// Name identifies the server: in errors, in [FromServers], and as the
	// prefix of its tools' names with [WithServerPrefix]. Names are unique
	// within a [Toolset].
	Name string

	// Command is a stdio server the toolset starts at Connect and stops at
	// Close, and restarts when it crashed (see the package documentation).
	Command *Command
	// HTTP is a streamable HTTP server.
	HTTP *HTTP
	// Transport is any other go-sdk transport, such as one end of
	// sdk.NewInMemoryTransports. The toolset connects over it and closes
	// the session at Close.
	Transport sdk.Transport
	// Session is a session the caller connected and owns: the toolset uses
	// it and never closes it. Its notifications do not reach the toolset;
	// call [Toolset.Refresh] when its tools change.
	Session *sdk.ClientSession

	// Allow, if not empty, keeps only the tools whose MCP name matches one
	// of its [path.Match] patterns; Deny then drops those that match one
	// of its patterns.
	Allow, Deny []string
	// Timeout bounds each call to one of the server's tools (0: the call's
	// context alone). A call that runs out of it fails with [ErrTimeout].
	Timeout time.Duration
	// ConnectTimeout bounds connecting and the initialize handshake
	// (default 30s).
	ConnectTimeout time.Duration
	// NeedsApproval makes every tool of the server a
	// [pipeline.ApprovalRequirer] that asks for a human decision.
	NeedsApproval bool
	// Enabled, if set, offers the server's tools only on the turns it
	// reports true for (see [pipeline.Condition]): on the others they are
	// not sent to the model, and a call to one gets a
	// [*pipeline.ToolDisabledError] as its output.
	Enabled pipeline.Condition
}

// A Command is a stdio MCP server: a program the toolset runs, talking
// JSON-RPC over its stdin and stdout.
type Command struct {
	// Path is the program, looked up in PATH when it has no slash.
	Path string
	Args []string
	// Env is added to the toolset process's environment ("KEY=value"; a
	// later value wins).
	Env []string
	// Dir is the working directory ("" for the current one).
	Dir string
	// Stderr receives the server's standard error (nil discards it).
	Stderr io.Writer
	// TerminateGrace is how long Close waits, after closing the server's
	// stdin, before it signals the process (default 5s).
	TerminateGrace time.Duration
}

// HTTP is a streamable HTTP MCP server.
type HTTP struct {
	// URL is the server's MCP endpoint.
	URL string
	// Client sends the requests (nil: http.DefaultClient); authentication
	// goes through its Transport.
	Client *http.Client
	// Header is added to every request.
	Header http.Header
	// MaxRetries is how often a dropped event stream is resumed (0: the
	// SDK's default; negative: never).
	MaxRetries int
}

// validate checks that s can be used; i is its place in the list.
func (s *Server) validate(i int) *ConfigError {
	fail := func(reason string) *ConfigError { return &ConfigError{Server: s.Name, Index: i, Reason: reason} }
	if s.Name == "" {
		return fail("no Name")
	}
	n := 0
	for _, set := range []bool{s.Command != nil, s.HTTP != nil, s.Transport != nil, s.Session != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fail("set exactly one of Command, HTTP, Transport and Session")
	}
	if s.Command != nil && s.Command.Path == "" {
		return fail("Command has no Path")
	}
	if s.HTTP != nil && s.HTTP.URL == "" {
		return fail("HTTP has no URL")
	}
	for _, p := range append(append([]string(nil), s.Allow...), s.Deny...) {
		if _, err := path.Match(p, ""); err != nil {
			return fail("bad filter pattern " + p + ": " + err.Error())
		}
	}
	if s.Timeout < 0 || s.ConnectTimeout < 0 {
		return fail("negative timeout")
	}
	return nil
}

// keeps reports whether the server's filters keep the tool named name.
func (s *Server) keeps(name string) bool {
	if len(s.Allow) > 0 && !matchAny(s.Allow, name) {
		return false
	}
	return !matchAny(s.Deny, name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return t.base.RoundTrip(r)
}
