// Package jsonscan is the one hand-written JSON scanner of turnkit: the
// checkpoint fast paths of package state (through state/internal/wire),
// the chat and response readers of model/openai and the validation of
// model/anthropic read JSON with it.
//
// Its contract is that of a fast path beside encoding/json, which stays
// the reference: a [Scanner] method either reads exactly what
// encoding/json would read from the same bytes or returns false, and the
// caller then leaves the input to encoding/json. It never reports an
// error of its own, so every error a user sees comes from encoding/json.
// Returning false on valid JSON is allowed (an object key with an escape
// or a byte outside ASCII, nesting beyond [MaxDepth]); returning true on
// input encoding/json refuses, or reading a different value, is a bug.
// [Valid] is the exception that must be exact: it is json.Valid.
package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/turnkit/turnkit/internal/jsonw"
)

// MaxDepth is the nesting [Scanner.Value] follows; deeper input goes
// to encoding/json (whose own limit, [ValidMaxDepth], [Valid] keeps).
const MaxDepth = 128

// Flags a scanned string or value carries.
const (
	StrEscaped  = 1 << iota // a backslash escape
	StrNonASCII             // a byte of 0x80 or more
	StrHTML                 // <, >, & or U+2028/U+2029, which encoding/json escapes
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

// numberTail marks the bytes that go on a number after a digit.
var numberTail = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['.'], t['e'], t['E'] = true, true, true
	return t
}()

// Scanner is a validating JSON scanner over b. Its methods return false on
// invalid JSON and on anything the fast paths do not handle; the position
// is then unspecified.
type Scanner struct {
	B     []byte
	I     int   // the position in B
	WS    bool  // whitespace was skipped between tokens
	Flags uint8 // union of the flags of the strings scanned
}

func (s *Scanner) SkipWS() {
	// Most tokens follow the one before at once: a test its caller
	// inlines, and a call only for whitespace.
	if s.I < len(s.B) && s.B[s.I] <= ' ' {
		s.skipWS()
	}
}

// skipWS is [Scanner.SkipWS] past its first test.
func (s *Scanner) skipWS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
			s.WS = true
		default:
			return
		}
	}
}

// Peek returns the next byte, or 0 at the end of the input.
func (s *Scanner) Peek() byte {
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Eat consumes c if it is the next byte.
func (s *Scanner) Eat(c byte) bool {
	if s.I < len(s.B) && s.B[s.I] == c {
		s.I++
		return true
	}
	return false
}

// Str scans a string and returns its contents, still escaped, and its
// flags.
func (s *Scanner) Str() ([]byte, uint8, bool) {
	if !s.Eat('"') {
		return nil, 0, false
	}
	start := s.I
	var flags uint8
	b := s.B
	for i := s.I; i < len(b); {
		// Step through a few plain bytes before reading eight at a time,
		// as jsonw.AppendString does.
		for n := min(len(b), i+4); i < n && strClass[b[i]] == 0; {
			i++
		}
		if i < len(b) && strClass[b[i]] == 0 {
			i += jsonw.PlainLen(b[i:])
		}
		if i == len(b) {
			break
		}
		c := b[i]
		cl := strClass[c]
		switch {
		case c == '"':
			s.I = i + 1
			s.Flags |= flags
			return b[start:i], flags, true
		case c == '\\':
			flags |= StrEscaped
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
			flags |= StrHTML
			i++
		default:
			flags |= StrNonASCII
			if c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8 {
				flags |= StrHTML
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

// Number scans a JSON number and returns its text and whether it is an
// integer (no fraction, no exponent).
func (s *Scanner) Number() ([]byte, bool, bool) {
	b, start, i := s.B, s.I, s.I
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
	s.I = i
	return b[start:i], integer, true
}

// Int64 scans an integer that fits in bits bits (at most 64), as
// encoding/json decodes one into a Go integer. It parses the digits
// itself, without strconv's allocation of its error.
func (s *Scanner) Int64(bits int) (int64, bool) {
	b, i := s.B, s.I
	// One digit, as most counters, turns and positions in a checkpoint
	// are: 83 instructions down to a dozen.
	if i+1 < len(b) {
		if d := b[i] - '0'; d <= 9 && !numberTail[b[i+1]] {
			s.I = i + 1
			return int64(d), true
		}
	}
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	limit := uint64(1)<<(bits-1) - 1 // the largest magnitude
	if neg {
		limit++
	}
	var u uint64
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			d := uint64(b[i] - '0')
			if u > (limit-d)/10 {
				return 0, false // out of range: strconv fails, and so does encoding/json
			}
			u = u*10 + d
		}
	default:
		return 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, false // not an integer, or not a number at all
	}
	s.I = i
	n := int64(u)
	if neg {
		n = -n // -(1<<63) is itself
	}
	return n, true
}

// Literal consumes the word w (true, false or null).
func (s *Scanner) Literal(w string) bool {
	if len(s.B)-s.I < len(w) || string(s.B[s.I:s.I+len(w)]) != w {
		return false
	}
	s.I += len(w)
	return true
}

// Null consumes a null and reports true, or reports false and consumes
// nothing.
func (s *Scanner) Null() bool { return s.Peek() == 'n' && s.Literal("null") }

// Boolean scans true or false.
func (s *Scanner) Boolean() (bool, bool) {
	switch s.Peek() {
	case 't':
		return true, s.Literal("true")
	case 'f':
		return false, s.Literal("false")
	}
	return false, false
}

// Value scans any JSON value, nested at depth.
func (s *Scanner) Value(depth int) bool {
	switch s.Peek() {
	case '{':
		return depth < MaxDepth && s.Members(func([]byte) bool { return s.Value(depth + 1) })
	case '[':
		return depth < MaxDepth && s.Elements(func() bool { return s.Value(depth + 1) })
	}
	return s.scalar()
}

// scalar scans a string, a number, true, false or null.
func (s *Scanner) scalar() bool {
	switch c := s.Peek(); {
	case c == '"':
		_, _, ok := s.Str()
		return ok
	case c == '-' || '0' <= c && c <= '9':
		_, _, ok := s.Number()
		return ok
	case c == 't':
		return s.Literal("true")
	case c == 'f':
		return s.Literal("false")
	case c == 'n':
		return s.Literal("null")
	}
	return false
}

// Span scans a value and returns its bytes and whether whitespace was
// skipped inside it.
func (s *Scanner) Span(depth int) ([]byte, bool, bool) {
	start, ws := s.I, s.WS
	s.WS = false
	ok := s.Value(depth)
	inner := s.WS
	s.WS = s.WS || ws
	return s.B[start:s.I], inner, ok
}

// objIter walks the members of an object. Its zero value is unusable:
// get one from [Scanner.object].
type objIter struct{ state int8 } // 0 bad start, 1 first member, 2 later members

// object consumes the opening brace of an object.
func (s *Scanner) object() objIter {
	if !s.Eat('{') {
		return objIter{}
	}
	return objIter{1}
}

// next moves to the next member and returns its key, still escaped, with
// the scanner at the member's value (whitespace skipped). more is false
// after the closing brace.
func (o *objIter) next(s *Scanner) (key []byte, more, ok bool) {
	if more, ok = o.before(s); !ok || !more {
		return nil, more, ok
	}
	return o.rest(s)
}

// before moves past the comma before the next member, if any, to its key
// (whitespace skipped); more is false after the closing brace.
func (o *objIter) before(s *Scanner) (more, ok bool) {
	s.SkipWS()
	b, i := s.B, s.I
	if i == len(b) {
		return false, false
	}
	switch c := b[i]; {
	case o.state == 0:
		return false, false
	case c == '}':
		s.I = i + 1
		return false, true
	case o.state == 1:
		o.state = 2 // the first member: its key scan checks c
		return true, true
	case c == ',':
		s.I = i + 1
		s.SkipWS()
		return true, true
	}
	return false, false
}

// rest scans a member's key and its colon, as next does after before.
func (o *objIter) rest(s *Scanner) (key []byte, more, ok bool) {
	key, ok = s.key()
	if !ok {
		return nil, false, false
	}
	s.SkipWS()
	if !s.Eat(':') {
		return nil, false, false
	}
	s.SkipWS()
	return key, true, true
}

// MembersAt scans an object whose members usually come in the order of
// keys, each a key as a compact writer puts it, quoted and followed by its
// colon ("name":). Before scanning a member's key it compares the input
// with the key after the last member's (at first, keys[0]): a member in
// that order costs that comparison, not the key's scan and its lookup.
// member gets the member's position in keys, or -1 and the key as scanned
// (refused, as by [Scanner.Members], if encoding/json would unescape or
// fold it), with the scanner at the member's value, which it scans; it
// returns the member's position in keys (-1 for none) and whether it read
// the value.
func (s *Scanner) MembersAt(keys []string, member func(f int, key []byte) (int, bool)) bool {
	next := 0
	for o := s.object(); ; {
		f := -1
		var key []byte
		more, ok := o.before(s)
		if ok && more {
			if next < len(keys) && hasPrefix(s.B[s.I:], keys[next]) {
				f = next
				s.I += len(keys[next])
				s.SkipWS()
			} else {
				key, more, ok = o.rest(s)
			}
		}
		if !ok || !more {
			return ok
		}
		if f, ok = member(f, key); !ok {
			return false
		}
		next = f + 1
	}
}

// hasPrefix reports whether b begins with p.
func hasPrefix(b []byte, p string) bool {
	return len(b) >= len(p) && string(b[:len(p)]) == p
}

// key scans an object's key. Keys are short and plain, so it steps a byte
// at a time, which costs a key less than [Scanner.Str]'s setup for
// eight-byte reads (callgrind: 101 instructions a key against 176, and
// eight-byte reads inline here cost 120), and leaves any other key to Str. It refuses a key that
// encoding/json would unescape or fold: the caller leaves it to it.
func (s *Scanner) key() ([]byte, bool) {
	b, i := s.B, s.I
	if i < len(b) && b[i] == '"' {
		for j := i + 1; j < len(b); j++ {
			if strClass[b[j]] != 0 {
				if b[j] != '"' {
					break
				}
				s.I = j + 1
				return b[i+1 : j], true
			}
		}
	}
	key, flags, ok := s.Str()
	return key, ok && flags&(StrEscaped|StrNonASCII) == 0
}

// Members scans an object, calling member for each of its members with
// the scanner at the member's value, which member scans.
func (s *Scanner) Members(member func(key []byte) bool) bool {
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

// Elements scans an array, calling elem with the scanner at each element,
// which elem scans.
func (s *Scanner) Elements(elem func() bool) bool {
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

// arrIter walks the elements of an array; get one from [Scanner.array].
type arrIter struct{ state int8 }

// array consumes the opening bracket of an array.
func (s *Scanner) array() arrIter {
	if !s.Eat('[') {
		return arrIter{}
	}
	return arrIter{1}
}

// next moves to the next element, with whitespace skipped; more is false
// after the closing bracket.
func (a *arrIter) next(s *Scanner) (more, ok bool) {
	s.SkipWS()
	switch a.state {
	case 0:
		return false, false
	case 1:
		if s.Eat(']') {
			return false, true
		}
	default:
		if s.Eat(']') {
			return false, true
		}
		if !s.Eat(',') {
			return false, false
		}
		s.SkipWS()
	}
	a.state = 2
	return true, true
}

// AppendUnquoted appends the string contents q (as returned by
// [Scanner.Str], with its flags) unescaped, exactly as encoding/json
// decodes a string: escapes resolved, a surrogate pair joined, a lone
// surrogate and each byte of invalid UTF-8 replaced by U+FFFD. Flags of
// StrEscaped|StrNonASCII are right for any scanned contents.
func AppendUnquoted(dst, q []byte, flags uint8) []byte {
	if flags&(StrEscaped|StrNonASCII) == 0 || flags&StrEscaped == 0 && utf8.Valid(q) {
		return append(dst, q...)
	}
	start := 0
	for i := 0; i < len(q); {
		c := q[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '\\' {
			i++
			continue
		}
		dst = append(dst, q[start:i]...)
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(q[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, q[i:i+size]...)
			}
			i += size
			start = i
			continue
		}
		if c != '\\' || i+1 >= len(q) {
			return append(dst, q[i:]...) // unreachable for scanned contents
		}
		switch e := q[i+1]; e {
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
			r := getU4(q[i:])
			if r < 0 {
				return append(dst, q[i:]...) // unreachable for scanned contents
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if pair := utf16.DecodeRune(r, getU4(q[i:])); pair != utf8.RuneError {
					r = pair
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			start = i
			continue
		default: // " \ /
			dst = append(dst, e)
		}
		i += 2
		start = i
	}
	return append(dst, q[start:]...)
}

// getU4 reads a \uXXXX escape at the start of q, or returns -1.
func getU4(q []byte) rune {
	if len(q) < 6 || q[0] != '\\' || q[1] != 'u' {
		return -1
	}
	return hex4(q[2:6])
}

// String scans a string and returns it unescaped. It allocates only the
// result.
func (s *Scanner) String(scratch *[]byte) (string, bool) {
	q, flags, ok := s.Str()
	if !ok {
		return "", false
	}
	if flags&(StrEscaped|StrNonASCII) == 0 {
		return string(q), true
	}
	*scratch = AppendUnquoted((*scratch)[:0], q, flags)
	return string(*scratch), true
}

// End skips trailing whitespace and reports whether the input is used up.
func (s *Scanner) End() bool {
	s.SkipWS()
	return s.I == len(s.B)
}

// FoldEq reports whether the ASCII strings a and b are equal under
// case folding, as encoding/json matches object keys to field names.
func FoldEq(a []byte, b string) bool {
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
