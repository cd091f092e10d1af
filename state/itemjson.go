package state

import "github.com/turnkit/turnkit/internal/jsonw"

// The constructors build an item's canonical JSON by hand: it is on every
// turn's path, and encoding/json's reflection costs more than the rest of
// an item. The output is byte for byte what encoding/json.Marshal makes of
// the same fields (itemjson_test.go checks it).

// appendString is [jsonw.AppendString].
func appendString(b []byte, s string) []byte { return jsonw.AppendString(b, s) }

// appendField is [jsonw.AppendField].
func appendField(b []byte, name, value string) []byte { return jsonw.AppendField(b, name, value) }

func messageRaw(role, text string) []byte {
	b := make([]byte, 0, 48+len(role)+len(text)) // 48: the JSON around role and text
	b = append(b, `{"type":"message","role":`...)
	b = appendString(b, role)
	b = appendField(b, "content", text)
	return append(b, '}')
}

func assistantRaw(id, text string) []byte {
	b := make([]byte, 0, 128+len(id)+len(text)) // 128: the JSON around id and text
	b = append(b, `{"type":"message"`...)
	if id != "" {
		b = appendField(b, "id", id)
	}
	b = append(b, `,"role":"assistant","status":"completed","content":[{"type":"output_text","text":`...)
	b = appendString(b, text)
	return append(b, `,"annotations":[]}]}`...)
}

func reasoningRaw(id, summary string) []byte {
	b := make([]byte, 0, 80+len(id)+len(summary))
	b = append(b, `{"type":"reasoning"`...)
	if id != "" {
		b = appendField(b, "id", id)
	}
	if summary == "" {
		return append(b, `,"summary":null}`...)
	}
	b = append(b, `,"summary":[{"type":"summary_text","text":`...)
	b = appendString(b, summary)
	return append(b, `}]}`...)
}

func callRaw(id, callID, name, arguments string) []byte {
	b := make([]byte, 0, 96+len(id)+len(callID)+len(name)+len(arguments))
	b = append(b, `{"type":"function_call"`...)
	if id != "" {
		b = appendField(b, "id", id)
	}
	b = appendField(b, "call_id", callID)
	b = appendField(b, "name", name)
	b = appendField(b, "arguments", arguments)
	return append(b, `,"status":"completed"}`...)
}

func outputRaw(callID, output string) []byte {
	b := make([]byte, 0, 64+len(callID)+len(output))
	b = append(b, `{"type":"function_call_output"`...)
	b = appendField(b, "call_id", callID)
	b = appendField(b, "output", output)
	return append(b, '}')
}
