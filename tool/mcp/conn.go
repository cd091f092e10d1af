package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const defaultConnectTimeout = 30 * time.Second

// A conn is the toolset's link to one server: the live session, and how to
// start another one after a crash.
type conn struct {
	srv     *Server
	client  *sdk.Client // nil for a caller-owned session
	changed func()      // marks the server's tool list stale
	where   endpoint    // how the server is reached, for tracing

	// With requests for input served: onElicit answers them in-process
	// (nil: they pause the call), slot holds the one call in flight, cur.
	elicits  bool
	onElicit ElicitationHandler
	slot     chan struct{}

	mu     sync.Mutex
	live   *session // nil before the first connect and after Close
	closed bool
	cur    *elicitCall // the call in flight, when elicits
}

// A session is one connection to the server; done is closed when it ends.
type session struct {
	cs   *sdk.ClientSession
	done chan struct{}
}

func (s *session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func newConn(srv *Server, cfg *config, changed func()) *conn {
	c := &conn{srv: srv, changed: changed, where: endpointOf(srv)}
	if cfg.elicit != elicitOff {
		c.elicits, c.onElicit, c.slot = true, cfg.onElicit, make(chan struct{}, 1)
	}
	if srv.Session == nil {
		opts := &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed() },
			// No roots; sampling only with WithSampling, elicitation
			// only with WithElicitation or WithElicitationHandler.
			Capabilities: &sdk.ClientCapabilities{},
		}
		if cfg.sampling != nil {
			opts.CreateMessageHandler = cfg.sampling
			opts.Capabilities.Sampling = &sdk.SamplingCapabilities{}
		}
		if cfg.elicit != elicitOff {
			opts.ElicitationHandler = c.elicit // the SDK declares the capability (form mode)
		}
		c.client = sdk.NewClient(cfg.client, opts)
	}
	return c
}

// An endpoint says how a server is reached: Kind is "stdio", "http" or ""
// (unknown), Host and Port those of an HTTP server's URL.
type endpoint struct {
	Kind string
	Host string
	Port int
}

// endpointOf returns where srv is reached, as far as its configuration
// says.
func endpointOf(srv *Server) endpoint {
	switch {
	case srv.Command != nil:
		return endpoint{Kind: "stdio"}
	case srv.HTTP != nil:
		return httpEndpoint(srv.HTTP.URL)
	case srv.Transport != nil:
		switch t := srv.Transport.(type) {
		case *sdk.CommandTransport:
			return endpoint{Kind: "stdio"}
		case *sdk.StreamableClientTransport:
			return httpEndpoint(t.Endpoint)
		}
	}
	return endpoint{}
}

// httpEndpoint returns the host and port of an HTTP server's URL; the
// port is the scheme's when the URL has none.
func httpEndpoint(rawURL string) endpoint {
	e := endpoint{Kind: "http"}
	u, err := url.Parse(rawURL)
	if err != nil {
		return e
	}
	e.Host = u.Hostname()
	switch p := u.Port(); {
	case p != "":
		e.Port, _ = strconv.Atoi(p)
	case u.Scheme == "https":
		e.Port = 443
	case u.Scheme == "http":
		e.Port = 80
	}
	return e
}

// sessionInfo returns the live session's ID and negotiated protocol
// version, or empty strings when there is none.
func (c *conn) sessionInfo() (id, protocolVersion string) {
	c.mu.Lock()
	s := c.live
	c.mu.Unlock()
	if s == nil {
		return "", ""
	}
	if r := s.cs.InitializeResult(); r != nil {
		protocolVersion = r.ProtocolVersion
	}
	return s.cs.ID(), protocolVersion
}

// restartable reports whether the toolset may start the server again.
func (c *conn) restartable() bool { return c.srv.Command != nil }

// connect makes the first session.
func (c *conn) connect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.dialLocked(ctx)
	return err
}

// current returns the live session.
func (c *conn) current() (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.live == nil {
		return nil, &Error{Server: c.srv.Name, Op: "call", kind: ErrTransport, Err: errors.New("toolset closed")}
	}
	return c.live, nil
}

// restart replaces old, which ended, with a new session, unless another
// call already did: then it returns that one.
func (c *conn) restart(ctx context.Context, old *session) (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, &Error{Server: c.srv.Name, Op: "restart", kind: ErrTransport, Err: errors.New("toolset closed")}
	}
	if c.live != old {
		return c.live, nil
	}
	_ = old.cs.Close() // reaps the exited process
	s, err := c.dialLocked(ctx)
	if err == nil {
		c.changed() // the new process may offer other tools
	}
	return s, err
}

// dialLocked connects a new session and makes it the live one.
func (c *conn) dialLocked(ctx context.Context) (*session, error) {
	if c.srv.Session != nil {
		s := &session{cs: c.srv.Session, done: make(chan struct{})}
		c.live = s
		return s, nil
	}
	op := "connect"
	if c.live != nil {
		op = "restart"
	}
	t, err := c.transport()
	if err != nil {
		return nil, &Error{Server: c.srv.Name, Op: op, kind: ErrTransport, Err: err}
	}
	d := c.srv.ConnectTimeout
	if d == 0 {
		d = defaultConnectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cs, err := c.client.Connect(cctx, t, nil)
	if err != nil {
		return nil, classify(cctx, ctx, c.srv.Name, op, "", err)
	}
	s := &session{cs: cs, done: make(chan struct{})}
	go func() {
		_ = cs.Wait()
		close(s.done)
	}()
	c.live = s
	return s, nil
}

func (c *conn) transport() (sdk.Transport, error) {
	switch {
	case c.srv.Command != nil:
		cmd := c.srv.Command
		x := exec.Command(cmd.Path, cmd.Args...)
		x.Dir = cmd.Dir
		if len(cmd.Env) > 0 {
			x.Env = append(os.Environ(), cmd.Env...)
		}
		x.Stderr = cmd.Stderr
		if x.Stderr == nil {
			x.Stderr = io.Discard
		}
		return &sdk.CommandTransport{Command: x, TerminateDuration: cmd.TerminateGrace}, nil
	case c.srv.HTTP != nil:
		h := c.srv.HTTP
		client := h.Client
		if client == nil {
			client = http.DefaultClient
		}
		if len(h.Header) > 0 {
			base := client.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			cp := *client
			cp.Transport = &headerTransport{base: base, header: h.Header.Clone()}
			client = &cp
		}
		return &sdk.StreamableClientTransport{Endpoint: h.URL, HTTPClient: client, MaxRetries: h.MaxRetries}, nil
	case c.srv.Transport != nil:
		return c.srv.Transport, nil
	}
	return nil, errors.New("no transport")
}

// close ends the session the toolset owns and waits for its process.
func (c *conn) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	s := c.live
	c.live = nil
	if s == nil || c.srv.Session != nil {
		return nil
	}
	err := s.cs.Close()
	<-s.done
	if err != nil && c.srv.Command != nil {
		// The process's exit status after its stdin closed, or finding
		// it already gone (it exited on its own before the signal), is
		// not a failure of Close.
		var ee *exec.ExitError
		if errors.As(err, &ee) || errors.Is(err, os.ErrProcessDone) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("mcp: server %q: close: %w", c.srv.Name, err)
	}
	return nil
}

// listTools lists the server's tools, every page.
func (c *conn) listTools(ctx context.Context) ([]*sdk.Tool, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	var tools []*sdk.Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, classify(ctx, ctx, c.srv.Name, "list tools", "", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// call calls a tool, restarting a crashed stdio server at most once (see
// the package documentation). resend says whether a call the server died
// during may be sent again.
func (c *conn) call(ctx context.Context, p *sdk.CallToolParams, resend bool) (*sdk.CallToolResult, error) {
	parent := ctx
	if c.srv.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.srv.Timeout)
		defer cancel()
	}
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	restarted := false
	if s.ended() && c.restartable() {
		restarted = true
		if s, err = c.restart(ctx, s); err != nil {
			return nil, err
		}
	}
	for {
		res, err := s.cs.CallTool(ctx, p)
		if err == nil {
			return res, nil
		}
		// A process that exited since the last call may not be seen as
		// ended yet: the request's write then fails with EPIPE, or the
		// SDK refuses the call before writing it because its read side
		// already saw the pipe close. Either way the server never read
		// it, so it may be sent again whatever the tool.
		unsent := errors.Is(err, syscall.EPIPE) || refusedUnwritten(err)
		if ctx.Err() != nil || !c.restartable() || !unsent && !c.crashed(s, err) {
			return nil, classify(ctx, parent, c.srv.Name, "call", p.Name, err)
		}
		crash := &Error{Server: c.srv.Name, Op: "call", Tool: p.Name, kind: ErrServerExited, Err: err}
		if restarted {
			return nil, crash
		}
		restarted = true
		if s, err = c.restart(ctx, s); err != nil {
			return nil, errors.Join(crash, err)
		}
		if !resend && !unsent {
			crash.Err = fmt.Errorf("%w (server restarted; the call was not sent again: the tool is not read-only or idempotent)", crash.Err)
			return nil, crash
		}
	}
}

// refusedUnwritten reports an SDK call refused before its request was
// written, because the connection was already shutting down: the SDK's
// jsonrpc2 ErrClientClosing, which it exposes only as the text of an
// ErrConnectionClosed (go-sdk v1.8.0, mcp/transport.go). A call whose
// request was written and whose connection broke gets the read error
// instead (jsonrpc2 retires in-flight calls with it), so this never
// mistakes a call the server may have run for an unsent one.
func refusedUnwritten(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) && strings.Contains(err.Error(), "client is closing")
}

// crashed reports whether err came from s ending: the process exited.
func (c *conn) crashed(s *session, err error) bool {
	if !errors.Is(err, sdk.ErrConnectionClosed) && !errors.Is(err, io.EOF) && !s.ended() {
		return false
	}
	// The read loop ends a moment after the pipe closes.
	select {
	case <-s.done:
		return true
	case <-time.After(time.Second):
		return false
	}
}

// classify turns an SDK error into an *Error. ctx is the context the
// request ran under (with the toolset's timeout), parent the caller's.
func classify(ctx, parent context.Context, server, op, tool string, err error) error {
	e := &Error{Server: server, Op: op, Tool: tool, Err: err}
	var wire *jsonrpc.Error
	switch {
	case parent.Err() != nil:
		// The caller cancelled: its context's error, with where it happened.
		e.kind = parent.Err()
		if errors.Is(err, parent.Err()) {
			e.Err = nil
		}
	case ctx.Err() != nil:
		e.kind = ErrTimeout
	case errors.As(err, &wire):
		e.kind = ErrProtocol
	case isTransportError(err):
		e.kind = ErrTransport
	case isDecodeError(err):
		e.kind = ErrProtocol
	default:
		e.kind = ErrTransport
	}
	return e
}

// isTransportError reports whether err says the connection failed.
func isTransportError(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrClosed) || errors.As(err, &ne) || errors.As(err, &ue)
}

// isDecodeError reports whether err says the server's answer could not be
// decoded.
func isDecodeError(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ) ||
		strings.Contains(err.Error(), "unmarshal") || strings.Contains(err.Error(), "unrecognized content type")
}
