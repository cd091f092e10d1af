package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"math/bits"
	"reflect"
	"strconv"

	"github.com/turnkit/turnkit/internal/jsonscan"
)

// Quoted is a string as the input has it: still escaped, with its flags.
type Quoted struct {
	Q     []byte
	Flags uint8
}

// AppendTo appends the string unescaped.
func (q Quoted) AppendTo(b []byte) []byte { return jsonscan.AppendUnquoted(b, q.Q, q.Flags) }

// OptQuoted scans a string or null (which leaves *dst as it is), keeping
// it in *dst when keep is set.
func OptQuoted(s *jsonscan.Scanner, dst *Quoted, keep bool) bool {
	if s.Null() {
		return true
	}
	q, flags, ok := s.Str()
	if keep {
		*dst = Quoted{q, flags}
	}
	return ok
}

// FieldSet records the fields of an object read so far.
type FieldSet uint32

// maxFields is the number of fields a FieldSet holds.
const maxFields = 32

// First marks field f read and reports whether it was not read before.
// encoding/json lets the last of repeated fields win; the fast paths leave
// repeated fields to it.
func (fs *FieldSet) First(f int) bool {
	if *fs&(1<<f) != 0 {
		return false
	}
	*fs |= 1 << f
	return true
}

// Has reports whether field f was read.
func (fs FieldSet) Has(f int) bool { return fs&(1<<f) != 0 }

// Field returns the index of key among names, the fields of an object
// decoded without DisallowUnknownFields, or -1 for another key. It reports
// false for a key encoding/json would match to a field by case folding
// only, and for a field read before.
//
// The writers put fields in the order of names, so the search starts after
// the highest field read and wraps around: a key in that order costs one
// comparison, and the fields a writer left out a length test each.
func (fs *FieldSet) Field(key []byte, names []string) (int, bool) {
	start := min(bits.Len32(uint32(*fs)), len(names))
	for i := start; i < len(names); i++ {
		if string(key) == names[i] {
			return i, fs.First(i)
		}
	}
	for i := range start {
		if string(key) == names[i] {
			return i, fs.First(i)
		}
	}
	for _, n := range names {
		if jsonscan.FoldEq(key, n) {
			return -1, false
		}
	}
	return -1, true
}

// OptInt scans an integer that fits in a Go int, or null (which leaves
// *dst as it is).
func OptInt(s *jsonscan.Scanner, dst *int) bool {
	if s.Null() {
		return true
	}
	n, ok := s.Int64(strconv.IntSize)
	*dst = int(n)
	return ok
}

// OptInt64 scans an integer or null (which leaves *dst as it is).
func OptInt64(s *jsonscan.Scanner, dst *int64) bool {
	if s.Null() {
		return true
	}
	n, ok := s.Int64(64)
	*dst = n
	return ok
}

// Delegate decodes the value at s into v with encoding/json, strictly
// (unknown fields and keys that match a field only by case folding
// refused; see [FoldedKey]), as the encoding/json path decodes the value of
// a field. list says v is a slice, which a run keeps nil when empty.
func Delegate(s *jsonscan.Scanner, v any, list bool) bool {
	raw, _, ok := s.Span(1)
	if !ok {
		return false
	}
	if string(raw) == "null" || list && string(raw) == "[]" {
		return true // encoding/json would leave v nil, or empty for a nil list
	}
	if key, _ := FoldedKey(raw, reflect.TypeOf(v), "$"); key != "" {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(v) != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}
