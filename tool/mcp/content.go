package mcp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"path"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/state"
)

// hasMedia reports whether a result holds content that becomes an image or
// a file part: an image with a MIME type, or an embedded resource with a
// blob. It does not allocate, so that a text-only result costs nothing
// more than it did before tool outputs had parts.
func hasMedia(res *sdk.CallToolResult) bool {
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.ImageContent:
			if c.MIMEType != "" {
				return true
			}
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Blob != nil {
				return true
			}
		}
	}
	return false
}

// contentParts turns a result into content parts, in order: text as a text
// part, an image as an input_image with a data URL, an embedded resource's
// blob as an input_file with a data URL, and anything else (audio, resource
// links, an embedded resource's text) as a text part holding the line
// [render] gives it. Structured content that no text part holds comes last,
// as a text part of JSON, as render adds it.
func contentParts(res *sdk.CallToolResult) ([]state.ContentPart, error) {
	parts := make([]state.ContentPart, 0, len(res.Content)+1)
	structuredShown := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, state.TextPart(c.Text))
			if res.StructuredContent != nil && !structuredShown && sameJSON(c.Text, res.StructuredContent) {
				structuredShown = true
			}
		case *sdk.ImageContent:
			if c.MIMEType == "" {
				d, err := describe(c) // a data URL needs a MIME type
				if err != nil {
					return nil, err
				}
				parts = append(parts, state.TextPart(d))
				continue
			}
			parts = append(parts, state.ImageURL(dataURL(c.MIMEType, c.Data), "auto"))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil && r.Blob != nil {
				mime := r.MIMEType
				if mime == "" {
					mime = "application/octet-stream"
				}
				parts = append(parts, state.FileData(resourceName(r.URI), dataURL(mime, r.Blob)))
				continue
			}
			d, err := describe(c)
			if err != nil {
				return nil, err
			}
			parts = append(parts, state.TextPart(d))
		case nil:
			return nil, errors.New("result has a null content part")
		default:
			d, err := describe(c)
			if err != nil {
				return nil, err
			}
			parts = append(parts, state.TextPart(d))
		}
	}
	if res.StructuredContent != nil && !structuredShown {
		s, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, err
		}
		parts = append(parts, state.TextPart(string(s)))
	}
	return parts, nil
}

// dataURL returns "data:<mime>;base64,<data>".
func dataURL(mime string, data []byte) string {
	const prefix, sep = "data:", ";base64,"
	var b strings.Builder
	b.Grow(len(prefix) + len(mime) + len(sep) + base64.StdEncoding.EncodedLen(len(data)))
	b.WriteString(prefix)
	b.WriteString(mime)
	b.WriteString(sep)
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	_, _ = enc.Write(data) // a strings.Builder does not fail
	_ = enc.Close()
	return b.String()
}

// resourceName returns the file name of a resource: the last element of
// its URI's path, or the URI itself when the path has none.
func resourceName(uri string) string {
	p := uri
	if u, err := url.Parse(uri); err == nil {
		p = u.Path
		if p == "" {
			p = u.Opaque
		}
	}
	if name := path.Base(p); name != "." && name != "/" && name != "" {
		return name
	}
	if uri == "" {
		return "resource"
	}
	return uri
}
