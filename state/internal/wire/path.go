package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// maxPathDepth is the nesting PathAt spells out; a deeper value's path
// ends in "…" after that many steps, so that hostile nesting cannot make
// an error message as large as its input.
const maxPathDepth = 32

// pathFrame is one open object or array on the way to an offset.
type pathFrame struct {
	array bool
	index int    // the element being read, in an array
	key   []byte // the key being read or last read, still escaped, in an object
	state uint8  // in an object: 0 before a key, 1 after a key, 2 in its value
}

// PathAt returns the JSON path of the innermost value that encloses byte
// offset off of data, which must be well-formed JSON up to off (as it is
// before the offset of a [json.SyntaxError], or up to the end of the value
// of a [json.UnmarshalTypeError]). root is the path of data itself. It
// reads data once, allocating only the path.
func PathAt(data []byte, off int64, root string) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	var (
		stack [maxPathDepth]pathFrame
		depth int // open containers, counting those past the stack
	)
	top := func() *pathFrame {
		if depth == 0 || depth > maxPathDepth {
			return nil
		}
		return &stack[depth-1]
	}
	b := data[:off]
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			if depth < maxPathDepth {
				stack[depth] = pathFrame{array: c == '['}
			}
			depth++
		case '}', ']':
			if depth > 0 {
				depth--
			}
		case ',':
			if f := top(); f != nil {
				f.index++
				f.state = 0
			}
		case ':':
			if f := top(); f != nil && !f.array {
				f.state = 2
			}
		case '"':
			start := i + 1
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if f := top(); f != nil && !f.array && f.state == 0 {
				f.key, f.state = b[start:min(i, len(b))], 1
			}
		}
	}
	var p []byte
	p = append(p, root...)
	for _, f := range stack[:min(depth, maxPathDepth)] {
		switch {
		case f.array:
			p = append(p, '[')
			p = strconv.AppendInt(p, int64(f.index), 10)
			p = append(p, ']')
		case f.state == 2:
			p = appendPathKey(p, f.key)
		default:
			// Before or in a key: the object itself encloses the offset.
			return string(p)
		}
	}
	if depth > maxPathDepth {
		p = append(p, "…"...)
	}
	return string(p)
}

// appendPathKey appends ".key", or `["key"]` for a key that is not a plain
// name, unescaping it.
func appendPathKey(p, key []byte) []byte {
	plain := len(key) > 0
	for _, c := range key {
		if !(c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return append(append(p, '.'), key...)
	}
	var s string
	if bytes.IndexByte(key, '\\') < 0 || json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s) != nil {
		s = string(key)
	}
	p = append(p, '[')
	p = strconv.AppendQuote(p, s)
	return append(p, ']')
}
