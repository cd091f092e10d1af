package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/state"
)

// A Prompt is a prompt template a server offers ([Toolset.Prompts]); get
// its messages, with the arguments filled in, with [Toolset.GetPrompt].
type Prompt struct {
	Server      string           // the server's name, as configured
	Name        string           // the prompt's name on the server
	Title       string           // a display name, if the server gives one
	Description string           // what the prompt is for
	Arguments   []PromptArgument // the arguments it takes
}

// A PromptArgument is an argument of a [Prompt].
type PromptArgument struct {
	Name        string
	Title       string
	Description string
	Required    bool
}

// A Resource is a piece of context a server offers ([Toolset.Resources]):
// a file, a document, a record. Read it with [Toolset.ReadResource].
type Resource struct {
	Server      string // the server's name, as configured
	URI         string // the resource's URI, unique on its server
	Name        string
	Title       string
	Description string
	MIMEType    string // if known
	Size        int64  // in bytes, if known (else 0)
}

// Prompts lists the prompts of every server, server by server in the
// order they were given to [Connect], every page of each. A server that
// does not offer prompts (it did not declare the capability) has none; a
// server that fails makes Prompts fail with an [*Error] (Op "list
// prompts").
func (ts *Toolset) Prompts(ctx context.Context) ([]Prompt, error) {
	var out []Prompt
	for _, c := range ts.conns {
		s, err := c.current()
		if err != nil {
			return nil, err
		}
		if caps := serverCaps(s); caps == nil || caps.Prompts == nil {
			continue
		}
		for p, err := range s.cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, classify(ctx, ctx, c.srv.Name, "list prompts", "", err)
			}
			args := make([]PromptArgument, 0, len(p.Arguments))
			for _, a := range p.Arguments {
				if a != nil {
					args = append(args, PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
				}
			}
			out = append(out, Prompt{Server: c.srv.Name, Name: p.Name, Title: p.Title, Description: p.Description, Arguments: args})
		}
	}
	return out, nil
}

// GetPrompt gets the prompt name of the named server with args filled in,
// as items a run can take as input: a user message for each of the
// prompt's user messages (text, images and embedded resources as content
// parts), an assistant message for each of its assistant messages. An
// assistant message can only be text: one that is not fails, as does a
// server error, with an [*Error] (Op "get prompt"). A server name that
// is not one of the toolset's fails with [ErrUnknownServer].
func (ts *Toolset) GetPrompt(ctx context.Context, server, name string, args map[string]string) ([]state.Item, error) {
	c, err := ts.conn(server, "get prompt")
	if err != nil {
		return nil, err
	}
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	res, err := s.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, classify(ctx, ctx, server, "get prompt", "", err)
	}
	items := make([]state.Item, 0, len(res.Messages))
	for i, m := range res.Messages {
		if m == nil {
			return nil, &Error{Server: server, Op: "get prompt", kind: ErrProtocol, Err: fmt.Errorf("prompt %q: message %d is null", name, i)}
		}
		parts, err := contentParts(&sdk.CallToolResult{Content: []sdk.Content{m.Content}})
		if err != nil {
			return nil, &Error{Server: server, Op: "get prompt", kind: ErrProtocol, Err: fmt.Errorf("prompt %q: message %d: %w", name, i, err)}
		}
		switch m.Role {
		case "user":
			items = append(items, state.UserContent(parts...))
		case "assistant":
			text, ok := onlyText(parts)
			if !ok {
				return nil, &Error{Server: server, Op: "get prompt", kind: ErrProtocol, Err: fmt.Errorf("prompt %q: message %d: an assistant message holds %s, not text", name, i, parts[0].Type())}
			}
			items = append(items, state.AssistantMessage("", text))
		default:
			return nil, &Error{Server: server, Op: "get prompt", kind: ErrProtocol, Err: fmt.Errorf("prompt %q: message %d has role %q", name, i, m.Role)}
		}
	}
	return items, nil
}

// Resources lists the resources of every server, server by server in the
// order they were given to [Connect], every page of each. A server that
// does not offer resources has none; one that fails makes Resources fail
// with an [*Error] (Op "list resources").
func (ts *Toolset) Resources(ctx context.Context) ([]Resource, error) {
	var out []Resource
	for _, c := range ts.conns {
		s, err := c.current()
		if err != nil {
			return nil, err
		}
		if caps := serverCaps(s); caps == nil || caps.Resources == nil {
			continue
		}
		for r, err := range s.cs.Resources(ctx, nil) {
			if err != nil {
				return nil, classify(ctx, ctx, c.srv.Name, "list resources", "", err)
			}
			out = append(out, Resource{Server: c.srv.Name, URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size})
		}
	}
	return out, nil
}

// ReadResource reads the resource at uri on the named server, as content
// parts a user message can hold (state.UserContent): text as a text part,
// an image as an input image, any other binary content as a file, each
// with a data URL. A server error fails with an [*Error] (Op "read
// resource"); a server name that is not one of the toolset's, with
// [ErrUnknownServer].
func (ts *Toolset) ReadResource(ctx context.Context, server, uri string) ([]state.ContentPart, error) {
	c, err := ts.conn(server, "read resource")
	if err != nil {
		return nil, err
	}
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	res, err := s.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, classify(ctx, ctx, server, "read resource", "", err)
	}
	parts := make([]state.ContentPart, 0, len(res.Contents))
	for i, rc := range res.Contents {
		switch {
		case rc == nil:
			return nil, &Error{Server: server, Op: "read resource", kind: ErrProtocol, Err: fmt.Errorf("resource %q: contents %d is null", uri, i)}
		case rc.Blob != nil:
			mime := rc.MIMEType
			if mime == "" {
				mime = "application/octet-stream"
			}
			if strings.HasPrefix(mime, "image/") {
				parts = append(parts, state.ImageURL(dataURL(mime, rc.Blob), "auto"))
			} else {
				parts = append(parts, state.FileData(resourceName(rc.URI), dataURL(mime, rc.Blob)))
			}
		default:
			parts = append(parts, state.TextPart(rc.Text))
		}
	}
	return parts, nil
}

// conn returns the connection to the server named name.
func (ts *Toolset) conn(name, op string) (*conn, error) {
	for _, c := range ts.conns {
		if c.srv.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("mcp: %s: %w %q", op, ErrUnknownServer, name)
}

// serverCaps returns the capabilities the server declared when the session
// was initialized, or nil.
func serverCaps(s *session) *sdk.ServerCapabilities {
	if r := s.cs.InitializeResult(); r != nil {
		return r.Capabilities
	}
	return nil
}

// onlyText returns the text of parts that are one text part.
func onlyText(parts []state.ContentPart) (string, bool) {
	if len(parts) != 1 || parts[0].Type() != "input_text" {
		return "", false
	}
	return parts[0].Text(), true
}
