package state

import (
	"unicode/utf8"
)

// The constructors build an item's canonical JSON by hand: it is on every
// turn's path, and encoding/json's reflection costs more than the rest of
// an item. The output is byte for byte what encoding/json.Marshal makes of
// the same fields (itemjson_test.go checks it).

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s to dst as a JSON string, escaped exactly as
// encoding/json escapes it (HTML-safe, invalid UTF-8 replaced by U+FFFD).
// Model adapters use it to build request bodies around items' canonical
// JSON without reflection.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s) }

// appendString is [AppendJSONString].
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendField(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

func messageRaw(role, text string) []byte {
	b := make([]byte, 0, 40+len(role)+len(text))
	b = append(b, `{"type":"message","role":`...)
	b = appendString(b, role)
	b = appendField(b, "content", text)
	return append(b, '}')
}

func assistantRaw(id, text string) []byte {
	b := make([]byte, 0, 120+len(id)+len(text))
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
