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
	"encoding/binary"
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

// An Object walks the members of an object in a loop, with no function
// called for each:
//
//	o := s.Object(keys)
//	for o.Next(s) {
//		// the member is keys[o.Field], or, if o.Field is -1, another
//		// (o.Key); the scanner is at its value: scan it, or stop
//	}
//	if !o.Done() {
//		// the object is not valid JSON, or has a key that Next refuses
//	}
//
// keys are the keys its members may have, in the order they usually come
// in (see [MakeKey]). Before scanning a member's key, Next compares the
// input with the key after the last member's in keys (at first, keys[0];
// a member whose key is not in keys does not count), then with the one
// after that (a member the writer left out, as omitempty does), so that a
// member in that order costs a comparison or two, not the key's scan and
// its lookup; a key scanned is looked up in keys from there on, then
// before. keys may be nil: then every key is scanned, and Field is -1.
type Object struct {
	keys []Key
	next int // the position in keys of the member looked for next
	// Field is the member's position in keys, or -1; then Key is its key
	// as scanned, still escaped.
	Field int
	Key   []byte
	state int8
}

// The states of an Object: a bad start or an error, before the first
// member, after a member, after the closing brace.
const (
	objBad int8 = iota
	objFirst
	objLater
	objDone
)

// Object consumes the opening brace of an object and returns the walk of
// its members, which usually come with keys (see [Object]).
func (s *Scanner) Object(keys []Key) Object {
	if !s.Eat('{') {
		return Object{}
	}
	return Object{keys: keys, state: objFirst}
}

// Next moves to the next member, with the scanner at its value
// (whitespace skipped), and sets Field (and Key). It is false after the
// closing brace, and when the input is not an object's next member or
// its key has an escape or a byte outside ASCII ([Object.Done] tells
// these apart): encoding/json would unescape or fold such a key, which a
// caller leaves to it. A key that differs from one of keys only in case
// has Field -1, as any other key has: encoding/json matches it by case
// folding, which a caller that reads only keys' members gives up on.
func (o *Object) Next(s *Scanner) bool {
	b, i, next := s.B, s.I, o.next
	if o.state == objLater && next < len(o.keys) && i < len(b) && b[i] == ',' {
		// The comma and the key expected, as a compact writer puts them?
		if k := &o.keys[next]; k.prefixOf(b[i+1:]) {
			s.I = i + 1 + len(k.s)
			s.SkipWS()
			o.Field, o.Key, o.next = next, nil, next+1
			return true
		}
	}
	more, ok := o.before(s)
	if !ok || !more {
		o.state = objBad
		if ok {
			o.state = objDone
		}
		return false
	}
	for f := o.next; f < len(o.keys) && f <= o.next+1; f++ {
		// The key expected, or the one after it (a writer left the
		// expected member out, as omitempty does)?
		if o.keys[f].prefixOf(s.B[s.I:]) {
			s.I += len(o.keys[f].s)
			s.SkipWS()
			o.Field, o.Key = f, nil
			o.next = f + 1
			return true
		}
	}
	key, ok := o.rest(s)
	if !ok {
		o.state = objBad
		return false
	}
	o.Field, o.Key = o.lookup(key), key
	if o.Field >= 0 {
		// After a key not in keys, the member looked for is the one
		// looked for before it: a writer's member that keys leave out
		// does not move the walk back to the first key.
		o.next = o.Field + 1
	}
	return true
}

// lookup returns the position in keys of the key named name exactly, or
// -1. It looks from the key expected next on, then before it: a writer
// puts members in the order of keys, so a key it wrote is found at once
// or after the few it left out, not after a comparison with every key
// before it (the run object's twenty-odd members made its keys' lookups
// quadratic).
func (o *Object) lookup(name []byte) int {
	for f := o.next; f < len(o.keys); f++ {
		if o.keys[f].Name() == string(name) {
			return f
		}
	}
	for f := range min(o.next, len(o.keys)) {
		if o.keys[f].Name() == string(name) {
			return f
		}
	}
	return -1
}

// Done reports that the walk read the object to its closing brace.
func (o *Object) Done() bool { return o.state == objDone }

// before moves past the comma before the next member, if any, to its key
// (whitespace skipped); more is false after the closing brace.
func (o *Object) before(s *Scanner) (more, ok bool) {
	s.SkipWS()
	b, i := s.B, s.I
	if i == len(b) || o.state != objFirst && o.state != objLater {
		return false, false
	}
	switch c := b[i]; {
	case c == '}':
		s.I = i + 1
		return false, true
	case o.state == objFirst:
		o.state = objLater // the first member: its key scan checks c
		return true, true
	case c == ',':
		s.I = i + 1
		s.SkipWS()
		return true, true
	}
	return false, false
}

// rest scans a member's key and its colon, after before.
func (o *Object) rest(s *Scanner) ([]byte, bool) {
	key, ok := s.key()
	if !ok {
		return nil, false
	}
	s.SkipWS()
	if !s.Eat(':') {
		return nil, false
	}
	s.SkipWS()
	return key, true
}

// A Key is an object's key as a compact writer puts it, quoted and
// followed by its colon ("name":), for [Object] to compare the input with.
// Most keys are at most 16 bytes: it compares those as two eight-byte
// words, without a call.
type Key struct {
	s      string
	lo, hi uint64 // the first eight bytes (those of s only, by mask) and the last eight
	mask   uint64
}

// MakeKey returns the Key of an object member named name (plain ASCII).
func MakeKey(name string) Key {
	k := Key{s: `"` + name + `":`}
	var b [16]byte
	copy(b[:], k.s)
	k.lo, k.mask = binary.LittleEndian.Uint64(b[:]), ^uint64(0)
	if n := len(k.s); n < 8 {
		k.mask >>= 8 * (8 - n)
	} else if n <= 16 {
		k.hi = binary.LittleEndian.Uint64([]byte(k.s[n-8:]))
	}
	return k
}

// String returns the key as the input has it.
func (k *Key) String() string { return k.s }

// Name returns the member's name.
func (k *Key) Name() string { return k.s[1 : len(k.s)-2] }

// prefixOf reports whether b begins with the key.
func (k *Key) prefixOf(b []byte) bool {
	n := len(k.s)
	if n > 16 || len(b) < 16 {
		return len(b) >= n && string(b[:n]) == k.s
	}
	if binary.LittleEndian.Uint64(b)&k.mask != k.lo {
		return false
	}
	return n <= 8 || binary.LittleEndian.Uint64(b[n-8:]) == k.hi
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
// the scanner at the member's value, which member scans. Its keys are
// refused as [Object.Next] refuses them.
func (s *Scanner) Members(member func(key []byte) bool) bool {
	o := s.Object(nil)
	for o.Next(s) {
		if !member(o.Key) {
			return false
		}
	}
	return o.Done()
}

// An Array walks the elements of an array in a loop, as [Object] walks
// an object's members.
type Array struct{ state int8 }

// Array consumes the opening bracket of an array and returns the walk of
// its elements.
func (s *Scanner) Array() Array {
	if !s.Eat('[') {
		return Array{}
	}
	return Array{objFirst}
}

// Next moves to the next element, with the scanner at it (whitespace
// skipped). It is false after the closing bracket and at an error
// ([Array.Done] tells them apart).
func (a *Array) Next(s *Scanner) bool {
	s.SkipWS()
	switch a.state {
	case objFirst:
		if s.Eat(']') {
			a.state = objDone
			return false
		}
	case objLater:
		if s.Eat(']') {
			a.state = objDone
			return false
		}
		if !s.Eat(',') {
			a.state = objBad
			return false
		}
		s.SkipWS()
	default:
		a.state = objBad
		return false
	}
	a.state = objLater
	return true
}

// Done reports that the walk read the array to its closing bracket.
func (a *Array) Done() bool { return a.state == objDone }

// Elements scans an array, calling elem with the scanner at each element,
// which elem scans.
func (s *Scanner) Elements(elem func() bool) bool {
	a := s.Array()
	for a.Next(s) {
		if !elem() {
			return false
		}
	}
	return a.Done()
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
