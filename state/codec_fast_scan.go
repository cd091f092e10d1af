package state

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The checkpoint fast paths (codec_fast*.go) read and write the common
// shapes of JSON by hand and give up on anything else, leaving it to the
// encoding/json paths, which stay the reference: a fast path either
// produces exactly what its reference would or reports that it did not
// apply. It never reports an error itself, so every error a caller sees
// comes from the reference path, with its JSON path.

// maxFastDepth is the nesting the fast scanner follows; deeper input goes
// to encoding/json (whose own limit is 10 000).
const maxFastDepth = 128

// Flags a scanned string or value carries.
const (
	strEscaped  = 1 << iota // a backslash escape
	strNonASCII             // a byte of 0x80 or more
	strHTML                 // <, >, & or U+2028/U+2029, which encoding/json escapes
)

// strClass marks the bytes the string scanner stops at: 1 for a quote, a
// backslash or a control character, 2 for the characters encoding/json
// escapes, 4 for non-ASCII bytes.
var strClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 1
	}
	t['"'], t['\\'] = 1, 1
	t['<'], t['>'], t['&'] = 2, 2, 2
	for c := 0x80; c < 0x100; c++ {
		t[c] = 4
	}
	return t
}()

// jscan is a validating JSON scanner over b. Its methods return false on
// invalid JSON and on anything the fast paths do not handle; the position
// is then unspecified.
type jscan struct {
	b     []byte
	i     int
	ws    bool  // whitespace was skipped between tokens
	flags uint8 // union of the flags of the strings scanned
}

func (s *jscan) skipWS() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
			s.ws = true
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 at the end of the input.
func (s *jscan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// eat consumes c if it is the next byte.
func (s *jscan) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str scans a string and returns its contents, still escaped, and its
// flags.
func (s *jscan) str() ([]byte, uint8, bool) {
	if !s.eat('"') {
		return nil, 0, false
	}
	start := s.i
	var flags uint8
	b := s.b
	for i := s.i; i < len(b); {
		c := b[i]
		cl := strClass[c]
		if cl == 0 {
			i++
			continue
		}
		switch {
		case c == '"':
			s.i = i + 1
			s.flags |= flags
			return b[start:i], flags, true
		case c == '\\':
			flags |= strEscaped
			if i+1 >= len(b) {
				return nil, 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || hex4(b[i+2:i+6]) < 0 {
					return nil, 0, false
				}
				i += 6
			default:
				return nil, 0, false
			}
		case cl == 1: // a control character
			return nil, 0, false
		case cl == 2:
			flags |= strHTML
			i++
		default:
			flags |= strNonASCII
			if c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8 {
				flags |= strHTML
			}
			i++
		}
	}
	return nil, 0, false
}

// hex4 returns the value of four hex digits, or -1.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// number scans a JSON number and returns its text and whether it is an
// integer (no fraction, no exponent).
func (s *jscan) number() ([]byte, bool, bool) {
	b, start, i := s.b, s.i, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return nil, false, false
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false, false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false, false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	s.i = i
	return b[start:i], integer, true
}

// int64 scans an integer that fits in bits bits, as encoding/json decodes
// one into a Go integer.
func (s *jscan) int64(bits int) (int64, bool) {
	text, integer, ok := s.number()
	if !ok || !integer {
		return 0, false
	}
	n, err := strconv.ParseInt(string(text), 10, bits)
	return n, err == nil
}

// literal consumes the word w (true, false or null).
func (s *jscan) literal(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

// boolean scans true or false.
func (s *jscan) boolean() (bool, bool) {
	switch s.peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	}
	return false, false
}

// value scans any JSON value, nested at depth.
func (s *jscan) value(depth int) bool {
	switch c := s.peek(); {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '{':
		return depth < maxFastDepth && s.members(func([]byte) bool { return s.value(depth + 1) })
	case c == '[':
		return depth < maxFastDepth && s.elements(func() bool { return s.value(depth + 1) })
	case c == '-' || '0' <= c && c <= '9':
		_, _, ok := s.number()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

// span scans a value and returns its bytes and whether whitespace was
// skipped inside it.
func (s *jscan) span(depth int) ([]byte, bool, bool) {
	start, ws := s.i, s.ws
	s.ws = false
	ok := s.value(depth)
	inner := s.ws
	s.ws = s.ws || ws
	return s.b[start:s.i], inner, ok
}

// objIter walks the members of an object. Its zero value is unusable:
// get one from [jscan.object].
type objIter struct{ state int8 } // 0 bad start, 1 first member, 2 later members

// object consumes the opening brace of an object.
func (s *jscan) object() objIter {
	if !s.eat('{') {
		return objIter{}
	}
	return objIter{1}
}

// next moves to the next member and returns its key, still escaped, with
// the scanner at the member's value (whitespace skipped). more is false
// after the closing brace.
func (o *objIter) next(s *jscan) (key []byte, more, ok bool) {
	s.skipWS()
	switch o.state {
	case 0:
		return nil, false, false
	case 1:
		if s.eat('}') {
			return nil, false, true
		}
	default:
		if s.eat('}') {
			return nil, false, true
		}
		if !s.eat(',') {
			return nil, false, false
		}
		s.skipWS()
	}
	o.state = 2
	key, flags, ok := s.str()
	if !ok {
		return nil, false, false
	}
	if flags&(strEscaped|strNonASCII) != 0 {
		// A key that encoding/json would unescape or fold: leave it to it.
		return nil, false, false
	}
	s.skipWS()
	if !s.eat(':') {
		return nil, false, false
	}
	s.skipWS()
	return key, true, true
}

// members scans an object, calling member for each of its members with
// the scanner at the member's value, which member scans.
func (s *jscan) members(member func(key []byte) bool) bool {
	for o := s.object(); ; {
		key, more, ok := o.next(s)
		if !ok || !more {
			return ok
		}
		if !member(key) {
			return false
		}
	}
}

// elements scans an array, calling elem with the scanner at each element,
// which elem scans.
func (s *jscan) elements(elem func() bool) bool {
	for a := s.array(); ; {
		more, ok := a.next(s)
		if !ok || !more {
			return ok
		}
		if !elem() {
			return false
		}
	}
}

// arrIter walks the elements of an array; get one from [jscan.array].
type arrIter struct{ state int8 }

// array consumes the opening bracket of an array.
func (s *jscan) array() arrIter {
	if !s.eat('[') {
		return arrIter{}
	}
	return arrIter{1}
}

// next moves to the next element, with whitespace skipped; more is false
// after the closing bracket.
func (a *arrIter) next(s *jscan) (more, ok bool) {
	s.skipWS()
	switch a.state {
	case 0:
		return false, false
	case 1:
		if s.eat(']') {
			return false, true
		}
	default:
		if s.eat(']') {
			return false, true
		}
		if !s.eat(',') {
			return false, false
		}
		s.skipWS()
	}
	a.state = 2
	return true, true
}

// appendUnquoted appends the string contents q (as returned by str, with
// its flags) unescaped, exactly as encoding/json decodes a string: escapes
// resolved, unpaired surrogates and invalid UTF-8 replaced by U+FFFD.
func appendUnquoted(dst, q []byte, flags uint8) []byte {
	if flags&(strEscaped|strNonASCII) == 0 || flags&strEscaped == 0 && utf8.Valid(q) {
		return append(dst, q...)
	}
	for r := 0; r < len(q); {
		switch c := q[r]; {
		case c == '\\' && r+1 < len(q):
			switch e := q[r+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := getU4(q[r:])
				if rr < 0 {
					return append(dst, q[r:]...) // unreachable for scanned input
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getU4(q[r:])); dec != unicode.ReplacementChar {
						r += 6
						dst = utf8.AppendRune(dst, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, rr)
				continue
			default: // " \ /
				dst = append(dst, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(q[r:])
			r += size
			dst = utf8.AppendRune(dst, rr)
		}
	}
	return dst
}

// getU4 reads a \uXXXX escape at the start of q, or returns -1.
func getU4(q []byte) rune {
	if len(q) < 6 || q[0] != '\\' || q[1] != 'u' {
		return -1
	}
	return hex4(q[2:6])
}

// string scans a string and returns it unescaped. It allocates only the
// result.
func (s *jscan) string(scratch *[]byte) (string, bool) {
	q, flags, ok := s.str()
	if !ok {
		return "", false
	}
	if flags&(strEscaped|strNonASCII) == 0 {
		return string(q), true
	}
	*scratch = appendUnquoted((*scratch)[:0], q, flags)
	return string(*scratch), true
}

// end skips trailing whitespace and reports whether the input is used up.
func (s *jscan) end() bool {
	s.skipWS()
	return s.i == len(s.b)
}

// asciiFoldEq reports whether the ASCII strings a and b are equal under
// case folding, as encoding/json matches object keys to field names.
func asciiFoldEq(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
