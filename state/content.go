package state

import (
	"bytes"
	"encoding/json"
	"strings"
)

// A ContentPart is one part of a user message's content or of a tool's
// output: text, an image or a file, as the Responses API takes them
// (input_text, input_image, input_file). Build parts with [TextPart],
// [ImageURL], [ImageFile], [FileID], [FileURL] and [FileData], a message
// with [UserContent] and an output with [ToolOutputContent]. A
// ContentPart is an immutable value; [Item.Content] reads the parts of an
// item back.
type ContentPart struct {
	typ                                          string
	text, imageURL, fileID, fileURL, data, fname string
	detail                                       string
	// raw is the part's JSON as it was read, when writing the fields
	// above would not give it back byte for byte (a part type turnkit
	// does not know, fields in another order, extra fields).
	raw string
}

// Type returns the part's Responses-API type: "input_text",
// "input_image", "input_file", or the type of a part read from JSON
// that turnkit does not know.
func (p ContentPart) Type() string { return p.typ }

// Text returns a text part's text, and "" for other parts.
func (p ContentPart) Text() string { return p.text }

// URL returns the URL of an image part (a data URL when the image is
// inline) or of a file part given by URL, and "" otherwise.
func (p ContentPart) URL() string { return p.imageURL + p.fileURL }

// FileID returns the Files API ID of an image or file part given by ID,
// and "" otherwise.
func (p ContentPart) FileID() string { return p.fileID }

// Detail returns an image part's detail ("low", "high" or "auto"), and ""
// for other parts.
func (p ContentPart) Detail() string { return p.detail }

// FileData returns the name and the content (a data URL) of a file part
// sent inline, and "", "" otherwise.
func (p ContentPart) FileData() (filename, dataURL string) { return p.fname, p.data }

// TextPart is a text part.
func TextPart(text string) ContentPart { return ContentPart{typ: "input_text", text: text} }

// ImageURL is an image at a URL, or inline as a data URL
// ("data:image/png;base64,…"). detail is "low", "high" or "auto" ("" is
// "auto").
func ImageURL(url, detail string) ContentPart {
	return ContentPart{typ: "input_image", imageURL: url, detail: orAuto(detail)}
}

// ImageFile is an image uploaded with the Files API, by its file ID.
func ImageFile(fileID, detail string) ContentPart {
	return ContentPart{typ: "input_image", fileID: fileID, detail: orAuto(detail)}
}

// FileID is a file uploaded with the Files API, by its ID.
func FileID(fileID string) ContentPart { return ContentPart{typ: "input_file", fileID: fileID} }

// FileURL is a file at a URL.
func FileURL(url string) ContentPart { return ContentPart{typ: "input_file", fileURL: url} }

// FileData is a file sent inline: its name and its content as a data URL
// ("data:application/pdf;base64,…").
func FileData(filename, dataURL string) ContentPart {
	return ContentPart{typ: "input_file", fname: filename, data: dataURL}
}

func orAuto(detail string) string {
	if detail == "" {
		return "auto"
	}
	return detail
}

// UserContent returns a user message whose content is the given parts, in
// order. Its text ([Item.Text]) is the text parts' text, joined.
func UserContent(parts ...ContentPart) Item {
	b := make([]byte, 0, 64+64*len(parts))
	b = append(b, `{"type":"message","role":"user","content":`...)
	b, text := appendParts(b, parts)
	it := newItem(KindUserMessage, "", "", text, append(b, '}'))
	it.list = true
	return it
}

// ToolOutputContent returns the output item of the function call callID
// whose output is the given parts, in order, rather than a string: what a
// tool that returns images or files answers. Its text ([Item.Text]) is
// the text parts' text, joined. The Responses API takes text, images and
// files there; Chat Completions takes text only.
func ToolOutputContent(callID, name string, parts ...ContentPart) Item {
	b := make([]byte, 0, 64+len(callID)+64*len(parts))
	b = append(b, `{"type":"function_call_output"`...)
	b = appendField(b, "call_id", callID)
	b = append(b, `,"output":`...)
	b, text := appendParts(b, parts)
	it := newItem(KindToolOutput, callID, name, text, append(b, '}'))
	it.list = true
	return it
}

// CustomOutputContent returns the output item of the custom tool call
// callID whose output is the given parts, as [ToolOutputContent] does for
// a function call.
func CustomOutputContent(callID, name string, parts ...ContentPart) Item {
	b := make([]byte, 0, 64+len(callID)+64*len(parts))
	b = append(b, `{"type":"custom_tool_call_output"`...)
	b = appendField(b, "call_id", callID)
	b = append(b, `,"output":`...)
	b, text := appendParts(b, parts)
	it := newItem(KindCustomOutput, callID, name, text, append(b, '}'))
	it.list = true
	return it
}

// JoinText returns the text of the text parts among parts, joined, as
// [Item.Text] returns it for an item made of them.
func JoinText(parts []ContentPart) string {
	n := 0
	for _, p := range parts {
		n += len(p.text)
	}
	if n == 0 {
		return ""
	}
	var text strings.Builder
	text.Grow(n)
	for _, p := range parts {
		text.WriteString(p.text)
	}
	return text.String()
}

// appendParts appends the parts as a JSON array, and returns their text.
func appendParts(b []byte, parts []ContentPart) ([]byte, string) {
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.appendJSON(b)
	}
	return append(b, ']'), JoinText(parts)
}

// Content returns the parts of a user message or an output (of a
// function, handoff or custom tool call) whose content is a list of parts,
// such as one made by [UserContent] or [ToolOutputContent]. It returns nil
// for an item whose content is a string, and for other kinds. Making an
// item of the same kind from the parts gives back the item's JSON (byte
// for byte when it was compact).
func (it Item) Content() []ContentPart {
	if !it.list {
		return nil // a string, or a kind without parts
	}
	var v struct {
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(it.raw, &v) != nil {
		return nil
	}
	list := v.Output
	if it.kind == KindUserMessage {
		list = v.Content
	}
	var raws []json.RawMessage
	if len(list) == 0 || list[0] != '[' || json.Unmarshal(list, &raws) != nil {
		return nil
	}
	parts := make([]ContentPart, 0, len(raws))
	for _, r := range raws {
		parts = append(parts, parsePart(r))
	}
	return parts
}

// parsePart reads one content part, keeping its JSON when writing its
// fields would not give it back.
func parsePart(raw json.RawMessage) ContentPart {
	var v struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL string `json:"image_url"`
		Detail   string `json:"detail"`
		FileID   string `json:"file_id"`
		FileURL  string `json:"file_url"`
		FileData string `json:"file_data"`
		Filename string `json:"filename"`
	}
	_ = json.Unmarshal(raw, &v) // a part that is not an object keeps its JSON only
	p := ContentPart{typ: v.Type, text: v.Text}
	switch v.Type {
	case "input_image":
		p.imageURL, p.fileID, p.detail = v.ImageURL, v.FileID, v.Detail
	case "input_file":
		p.fileID, p.fileURL, p.data, p.fname = v.FileID, v.FileURL, v.FileData, v.Filename
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		compact.Reset()
		compact.Write(raw)
	}
	if string(p.appendJSON(nil)) != compact.String() {
		p.raw = compact.String()
	}
	return p
}

// appendJSON appends the part as the Responses API's input content.
func (p ContentPart) appendJSON(b []byte) []byte {
	if p.raw != "" {
		return append(b, p.raw...)
	}
	b = append(b, `{"type":`...)
	b = appendString(b, p.typ)
	switch p.typ {
	case "input_text":
		b = appendField(b, "text", p.text)
	case "input_image":
		b = appendField(b, "detail", p.detail)
		if p.imageURL != "" {
			b = appendField(b, "image_url", p.imageURL)
		}
		if p.fileID != "" {
			b = appendField(b, "file_id", p.fileID)
		}
	case "input_file":
		for _, f := range [...][2]string{{"file_id", p.fileID}, {"file_url", p.fileURL}, {"filename", p.fname}, {"file_data", p.data}} {
			if f[1] != "" {
				b = appendField(b, f[0], f[1])
			}
		}
	}
	return append(b, '}')
}
