package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A call's arguments go to the client as the map[string]any it takes, and
// the client turns its whole request into JSON and back into maps before
// sending it (numbers become float64 there whatever the adapter does). So
// the map only has to marshal as the arguments do: its values are the raw
// JSON of each member, which the client writes as it is, instead of the
// Go values a full decode would build and the client would write again.

// argsDecoder splits calls' arguments into members. The raw values of all
// the calls of one request share its buffers.
type argsDecoder struct {
	text []byte            // the arguments' text, each call's after the last's
	raw  []json.RawMessage // the members' values, cut from text
}

// grow sizes the buffers for calls arguments of size bytes in all,
// reusing those that are large enough.
func (d *argsDecoder) grow(calls, size int) {
	d.text = reuse(d.text, size)
	d.raw = reuse(d.raw, calls)
}

// reset forgets the values read, keeping the buffers.
func (d *argsDecoder) reset() {
	clear(d.raw)
	d.text, d.raw = d.text[:0], d.raw[:0]
}

// decode reads a call's JSON arguments as the object the API takes: each
// member's key, with its raw value, in a map from newMap (nil for no
// text: the client sends no args for an empty map either). An argument
// text that is not a JSON object is an error, as are numbers out of
// float64's range, which the client could not decode.
func (d *argsDecoder) decode(s string, newMap func() map[string]any) (map[string]any, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, nil
	}
	if t[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	start := len(d.text)
	d.text = append(d.text, t...)
	text := d.text[start:len(d.text):len(d.text)]
	if args, ok := d.members(t, text, newMap); ok {
		return args, nil
	}
	// The slow path says what is wrong as encoding/json does.
	var args map[string]any
	if err := json.Unmarshal(text, &args); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return args, nil
}

// members splits the object t (text holds the same bytes, for the raw
// values) into keys and raw values; ok is false if t is not valid JSON,
// or holds a number out of range.
func (d *argsDecoder) members(t string, text []byte, newMap func() map[string]any) (args map[string]any, ok bool) {
	if !json.Valid(text) {
		return nil, false
	}
	args = newMap()
	i := skipSpace(t, 1)
	for t[i] != '}' {
		end, escaped := stringEnd(t, i)
		key, ok := readKey(t[i+1:end-1], escaped, text[i:end])
		if !ok {
			return nil, false
		}
		i = skipSpace(t, skipSpace(t, end)+1) // past the colon
		vend, ok := valueEnd(t, i)
		if !ok {
			return nil, false
		}
		d.raw = append(d.raw, text[i:vend:vend])
		args[key] = &d.raw[len(d.raw)-1] // a pointer, which an interface holds without an allocation
		if i = skipSpace(t, vend); t[i] == ',' {
			i = skipSpace(t, i+1)
		}
	}
	return args, true
}

// readKey returns a member's key: key, the text between its quotes, or
// what encoding/json reads from quoted, the key with its quotes, when
// key holds an escape or is not valid UTF-8.
func readKey(key string, escaped bool, quoted []byte) (string, bool) {
	if !escaped && utf8.ValidString(key) {
		return key, true
	}
	var k string
	err := json.Unmarshal(quoted, &k)
	return k, err == nil
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(t string, i int) int {
	for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string that opens at
// t[i], and whether it holds an escape.
func stringEnd(t string, i int) (end int, escaped bool) {
	for i++; i < len(t); i++ {
		switch t[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return len(t), escaped
}

// valueEnd returns the index just past the JSON value that starts at
// t[i], in a valid JSON object; ok is false if the value holds a number
// out of float64's range.
func valueEnd(t string, i int) (end int, ok bool) {
	depth := 0
	for i < len(t) {
		switch c := t[i]; {
		case c == '"':
			i, _ = stringEnd(t, i)
		case c == '{' || c == '[':
			depth++
			i++
		case (c == '}' || c == ']') && depth > 0:
			depth--
			i++
		case (c == '}' || c == ',') && depth == 0:
			return trimSpaceEnd(t, i), true
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(t) && strings.IndexByte("0123456789+-.eE", t[j]) >= 0 {
				j++
			}
			if _, err := strconv.ParseFloat(t[i:j], 64); err != nil {
				return 0, false
			}
			i = j
		default: // white space, a colon or comma inside, a literal's letters
			i++
		}
	}
	return trimSpaceEnd(t, i), true
}

// trimSpaceEnd returns the index just past the last byte before end that
// is not JSON white space.
func trimSpaceEnd(t string, end int) int {
	for end > 0 && (t[end-1] == ' ' || t[end-1] == '\t' || t[end-1] == '\n' || t[end-1] == '\r') {
		end--
	}
	return end
}
