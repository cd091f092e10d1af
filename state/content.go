package state

import "strings"

// A ContentPart is one part of a user message's content: text, an image or
// a file, as the Responses API takes them (input_text, input_image,
// input_file). Build parts with [TextPart], [ImageURL], [ImageFile],
// [FileID], [FileURL] and [FileData], and a message with [UserContent].
type ContentPart struct {
	typ                                          string
	text, imageURL, fileID, fileURL, data, fname string
	detail                                       string
}

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
	var text strings.Builder
	b := make([]byte, 0, 64+64*len(parts))
	b = append(b, `{"type":"message","role":"user","content":[`...)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.appendJSON(b)
		text.WriteString(p.text)
	}
	b = append(b, "]}"...)
	return newItem(KindUserMessage, "", "", text.String(), b)
}

// appendJSON appends the part as the Responses API's input content.
func (p ContentPart) appendJSON(b []byte) []byte {
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
