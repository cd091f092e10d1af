package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// MetaIdempotencyKey is the _meta key of a call's idempotency key
// ([pipeline.ToolCall.IdempotencyKey]) in every tools/call request.
const MetaIdempotencyKey = "com.github.turnkit/idempotency-key"

// A Tool is one tool of an MCP server, as a [pipeline.Tool]. [Toolset.Tools]
// hands them out; a Tool is safe for concurrent use.
type Tool struct {
	conn     *conn
	server   string
	name     string
	approval bool
	textOnly bool // results as text only (WithTextResults)
	spec     atomic.Pointer[pipeline.ToolSpec]
	resend   atomic.Bool // read-only or idempotent: may be sent again after a crash
}

var (
	_ pipeline.Tool             = (*Tool)(nil)
	_ pipeline.ContentTool      = (*Tool)(nil)
	_ pipeline.ApprovalRequirer = (*Tool)(nil)
	_ pipeline.ConditionalTool  = (*Tool)(nil)
	_ pipeline.TimeoutTool      = (*Tool)(nil)
)

// Condition returns the condition of the tool's server (Server.Enabled),
// nil if it has none.
func (t *Tool) Condition() pipeline.Condition { return t.conn.srv.Enabled }

// Timeout returns -1 when the tool's server has a Timeout, which bounds
// its calls (as [ErrTimeout]) instead of the runner's default
// (pipeline.WithToolTimeout), and 0 otherwise: the runner's default
// applies.
func (t *Tool) Timeout() time.Duration {
	if t.conn.srv.Timeout > 0 {
		return -1
	}
	return 0
}

// Spec returns the tool's spec as last listed. Parameters is shared and
// must not be modified.
func (t *Tool) Spec() pipeline.ToolSpec { return *t.spec.Load() }

// Retryable reports whether the server annotates the tool as read-only or
// idempotent (readOnlyHint, idempotentHint): a call may run again with the
// same arguments without a further effect. It is what the package already
// relies on to send a call again to a restarted server. The hints are the
// server's word: trust them as far as you trust the server.
func (t *Tool) Retryable() bool { return t.resend.Load() }

// Retryable reports whether c calls an MCP tool that is [Tool.Retryable]:
// the predicate for middleware/checkpoint's WithRetryableTools, which then
// skips its save before such a call runs.
func Retryable(c *pipeline.ToolCall) bool {
	t, ok := c.Tool.(*Tool)
	return ok && t.Retryable()
}

// Server returns the name of the tool's server.
func (t *Tool) Server() string { return t.server }

// MCPName returns the tool's name on its server (the model may see
// another one, see [WithServerPrefix]).
func (t *Tool) MCPName() string { return t.name }

// MCPSession returns the ID of the session the tool's calls go through
// ("" when the transport has none, as stdio has not, or after Close) and
// the protocol version the server agreed to at initialize. After a restart
// they are the new session's. Tracing reads them (mcp.session.id,
// mcp.protocol.version).
func (t *Tool) MCPSession() (id, protocolVersion string) { return t.conn.sessionInfo() }

// MCPTransport says how the tool's server is reached: kind is "stdio" (a
// [Command], or an sdk.CommandTransport), "http" (an [HTTP] server, or an
// sdk.StreamableClientTransport, with its URL's host and port, the
// scheme's default when the URL has none) or "" (another transport, or a
// caller-owned session). Tracing reads it (network.transport,
// server.address, server.port).
func (t *Tool) MCPTransport() (kind, host string, port int) {
	e := t.conn.where
	return e.Kind, e.Host, e.Port
}

// NeedsApproval reports whether the tool's server was configured with
// Server.NeedsApproval.
func (t *Tool) NeedsApproval(context.Context, *pipeline.ToolCall) (bool, error) {
	return t.approval, nil
}

// Call sends the call to the server and returns its result as text (see
// the package documentation): images, audio and resources are described,
// without their data. The runner calls [Tool.CallContent] instead.
// Arguments that are not a JSON object are a [*pipeline.ArgumentError]; an
// isError result is a [*ToolError]; a failure to get a result is an
// [*Error].
func (t *Tool) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	res, err := t.send(ctx, c)
	if err != nil {
		return "", err
	}
	return t.text(res)
}

// CallContent sends the call to the server, as [Tool.Call] does, and
// returns its result as content parts when it holds an image or an
// embedded resource with a blob (see the package documentation): text is
// then the parts' text, joined. Any other result is returned as Call
// returns it, as text with nil parts. Errors are Call's.
func (t *Tool) CallContent(ctx context.Context, c *pipeline.ToolCall) (string, []state.ContentPart, error) {
	res, err := t.send(ctx, c)
	if err != nil {
		return "", nil, err
	}
	return t.content(res)
}

// content is CallContent's reading of a result the server sent.
func (t *Tool) content(res *sdk.CallToolResult) (string, []state.ContentPart, error) {
	if res.IsError || t.textOnly || !hasMedia(res) {
		out, err := t.text(res)
		return out, nil, err
	}
	parts, err := contentParts(res)
	if err != nil {
		return "", nil, &Error{Server: t.server, Op: "call", Tool: t.name, kind: ErrProtocol, Err: err}
	}
	return state.JoinText(parts), parts, nil
}

// send sends the call to the server and returns its result.
func (t *Tool) send(ctx context.Context, c *pipeline.ToolCall) (*sdk.CallToolResult, error) {
	args, err := arguments(c.Arguments)
	if err != nil {
		return nil, &pipeline.ArgumentError{Tool: c.Name, CallID: c.CallID, Err: err}
	}
	p := &sdk.CallToolParams{Name: t.name, Arguments: args}
	if c.Turn != nil && c.Turn.Run != nil {
		p.Meta = sdk.Meta{MetaIdempotencyKey: c.IdempotencyKey()}
	}
	if !t.conn.elicits {
		return t.conn.call(ctx, p, t.resend.Load())
	}
	cctx, ec, err := t.conn.enter(ctx, c)
	if err != nil {
		return nil, err
	}
	defer t.conn.leave(ec)
	res, err := t.conn.call(cctx, p, t.resend.Load())
	if paused, aerr := ec.outcome(); paused != (state.Elicitation{}) {
		return nil, &pipeline.ElicitationError{Tool: c.Name, CallID: c.CallID, Elicitation: paused}
	} else if aerr != nil {
		return nil, aerr
	}
	return res, err
}

// text returns a result as the tool's output text, or a [*ToolError] for
// an isError result.
func (t *Tool) text(res *sdk.CallToolResult) (string, error) {
	out, err := render(res)
	if err != nil {
		return "", &Error{Server: t.server, Op: "call", Tool: t.name, kind: ErrProtocol, Err: err}
	}
	if res.IsError {
		return "", &ToolError{Server: t.server, Tool: t.name, Output: out}
	}
	return out, nil
}

// keptBy reports whether every filter keeps the tool.
func (t *Tool) keptBy(filters []Filter) bool {
	name := t.Spec().Name
	for _, f := range filters {
		if f != nil && !f(t.server, name) {
			return false
		}
	}
	return true
}

var emptyObject = json.RawMessage(`{}`)

// arguments checks that the model's arguments are one JSON object.
func arguments(s string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return emptyObject, nil
	}
	if b[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	if !json.Valid(b) {
		return nil, errors.New("malformed JSON")
	}
	return b, nil
}

// render turns a result into the tool's output text.
func render(res *sdk.CallToolResult) (string, error) {
	if len(res.Content) == 1 && res.StructuredContent == nil {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			return tc.Text, nil // the common case, without a copy
		}
	}
	var b strings.Builder
	line := func(s string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	structuredShown := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			line(c.Text)
			if res.StructuredContent != nil && !structuredShown && sameJSON(c.Text, res.StructuredContent) {
				structuredShown = true
			}
		case nil:
			return "", errors.New("result has a null content part")
		default:
			d, err := describe(c)
			if err != nil {
				return "", err
			}
			line(d)
		}
	}
	if res.StructuredContent != nil && !structuredShown {
		s, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", err
		}
		line(string(s))
	}
	return b.String(), nil
}

// sameJSON reports whether text is JSON for the value v.
func sameJSON(text string, v any) bool {
	var got any
	if json.Unmarshal([]byte(text), &got) != nil {
		return false
	}
	return reflect.DeepEqual(got, v)
}

// part describes a non-text content part, without its binary data.
type part struct {
	Type        string `json:"type"`
	MIMEType    string `json:"mimeType,omitempty"`
	Bytes       *int   `json:"bytes,omitempty"`
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Text        string `json:"text,omitempty"`
}

// describe renders a non-text content part as one line of JSON. Binary
// data is left out (its size is given): [Tool.Call] returns text, and
// audio has no part in a tool's output (see contentParts).
func describe(c sdk.Content) (string, error) {
	size := func(b []byte) *int { n := len(b); return &n }
	var p part
	switch c := c.(type) {
	case *sdk.ImageContent:
		p = part{Type: "image", MIMEType: c.MIMEType, Bytes: size(c.Data)}
	case *sdk.AudioContent:
		p = part{Type: "audio", MIMEType: c.MIMEType, Bytes: size(c.Data)}
	case *sdk.ResourceLink:
		p = part{Type: "resource_link", URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType}
	case *sdk.EmbeddedResource:
		if c.Resource == nil {
			return "", errors.New("embedded resource without contents")
		}
		r := c.Resource
		p = part{Type: "resource", URI: r.URI, MIMEType: r.MIMEType, Text: r.Text}
		if r.Blob != nil {
			p.Bytes = size(r.Blob)
		}
	default:
		b, err := json.Marshal(c)
		return string(b), err
	}
	b, err := json.Marshal(p)
	return string(b), err
}
