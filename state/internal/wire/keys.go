package wire

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// FoldedKey finds the first object key in data that encoding/json, decoding
// data into a value of type t, would match to a struct field only by case
// folding ("Seq" or "SEQ" for "seq"): the format's keys match exactly, and
// encoding/json's fallback must refuse what the fast paths refuse. data
// must be well-formed JSON (as [json.Valid] reports). It returns the
// key's JSON path below root and its byte offset, or "" when every key
// that names a field names it exactly. Values whose type decodes itself
// (a [json.RawMessage], a [json.Unmarshaler], an
// [encoding.TextUnmarshaler]) and values of another type than t expects
// are skipped: their own decoder, or encoding/json's type error, answers
// for them. It reads data once, with no recursion deeper than t's.
func FoldedKey(data []byte, t reflect.Type, root string) (path string, offset int64) {
	// A first walk looks for the key without building any path; only if
	// it finds one does a second walk name it.
	w := keyWalker{b: data}
	if _, off := w.value(t, "", 0); off == 0 {
		return "", 0
	}
	w = keyWalker{b: data, paths: true}
	return w.value(t, root, 0)
}

// maxTypeDepth bounds the walk of a recursive type; values nested deeper
// are skipped.
const maxTypeDepth = 64

// A keyWalker walks data for FoldedKey. It reports a key by its offset,
// never 0 (a key follows a brace), and, with paths, by its path too.
type keyWalker struct {
	b     []byte
	i     int
	paths bool // build the paths; otherwise every path is ""
}

// member returns the path of member key below path.
func (w *keyWalker) member(path string, key []byte) string {
	if !w.paths {
		return ""
	}
	return path + "." + string(key)
}

// element returns the path of element n below path.
func (w *keyWalker) element(path string, n int) string {
	if !w.paths {
		return ""
	}
	return path + "[" + strconv.Itoa(n) + "]"
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (w *keyWalker) ws() {
	for w.i < len(w.b) && (w.b[w.i] == ' ' || w.b[w.i] == '\t' || w.b[w.i] == '\n' || w.b[w.i] == '\r') {
		w.i++
	}
}

// value walks the value at w.i, which a value of type t receives.
func (w *keyWalker) value(t reflect.Type, path string, depth int) (string, int64) {
	w.ws()
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if w.i >= len(w.b) {
		return "", 0
	}
	if t == nil || depth > maxTypeDepth || decodesItself(t) {
		w.skip()
		return "", 0
	}
	switch w.b[w.i] {
	case '{':
		switch t.Kind() {
		case reflect.Struct:
			return w.object(t, path, depth)
		case reflect.Map:
			return w.members(func(key []byte, start int) (string, int64) {
				return w.value(t.Elem(), w.member(path, key), depth+1)
			})
		}
	case '[':
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			w.i++
			for n := 0; ; n++ {
				w.ws()
				if w.i < len(w.b) && w.b[w.i] == ']' {
					w.i++
					return "", 0
				}
				if n > 0 {
					w.i++ // the comma
				}
				if p, off := w.value(t.Elem(), w.element(path, n), depth+1); off != 0 {
					return p, off
				}
			}
		}
	}
	w.skip()
	return "", 0
}

// object walks an object that decodes into struct type t.
func (w *keyWalker) object(t reflect.Type, path string, depth int) (string, int64) {
	fields := keysOf(t)
	return w.members(func(key []byte, start int) (string, int64) {
		if ft, ok := fields.exact[string(key)]; ok {
			return w.value(ft, w.member(path, key), depth+1)
		}
		for _, name := range fields.names {
			if bytes.EqualFold(key, []byte(name)) {
				return w.member(path, key), int64(start)
			}
		}
		w.skip() // an unknown member: the decoder refuses or ignores it
		return "", 0
	})
}

// members walks an object's members, calling member with each unescaped
// key, its offset and w.i at its value.
func (w *keyWalker) members(member func(key []byte, start int) (string, int64)) (string, int64) {
	w.i++ // {
	for n := 0; ; n++ {
		w.ws()
		if w.i >= len(w.b) {
			return "", 0
		}
		if w.b[w.i] == '}' {
			w.i++
			return "", 0
		}
		if n > 0 {
			w.i++ // the comma
			w.ws()
		}
		start := w.i
		w.skip()
		key := w.b[start:w.i]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if json.Unmarshal(key, &s) == nil {
				key = []byte(s)
			}
		} else if len(key) >= 2 {
			key = key[1 : len(key)-1] // no escapes: the bytes between the quotes
		}
		w.ws()
		w.i++ // the colon
		if p, off := member(key, start); off != 0 {
			return p, off
		}
	}
}

// skip moves past the value at w.i (a string, number, literal, object or
// array) without recursion.
func (w *keyWalker) skip() {
	w.ws()
	depth := 0
	for w.i < len(w.b) {
		switch c := w.b[w.i]; c {
		case '"':
			w.i++
			for w.i < len(w.b) && w.b[w.i] != '"' {
				if w.b[w.i] == '\\' {
					w.i++
				}
				w.i++
			}
			w.i++
		case '{', '[':
			depth++
			w.i++
			continue
		case '}', ']':
			if depth == 0 {
				return
			}
			depth--
			w.i++
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return
			}
			w.i++
			continue
		default:
			w.i++
			continue
		}
		if depth == 0 {
			return
		}
	}
}

// decodesItself reports whether encoding/json hands a value of type t to
// its own decoding method.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || pt.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

// structKeys is a struct type's JSON member names and their types.
type structKeys struct {
	exact map[string]reflect.Type
	names []string
}

var structKeysCache sync.Map // reflect.Type → *structKeys

// keysOf returns the members encoding/json decodes into struct type t.
func keysOf(t reflect.Type) *structKeys {
	if k, ok := structKeysCache.Load(t); ok {
		return k.(*structKeys)
	}
	k := &structKeys{exact: make(map[string]reflect.Type)}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if tag, ok := sf.Tag.Lookup("json"); ok {
			if tag == "-" {
				continue
			}
			if n, _, _ := strings.Cut(tag, ","); n != "" {
				name = n
			}
		}
		k.exact[name] = sf.Type
		k.names = append(k.names, name)
	}
	v, _ := structKeysCache.LoadOrStore(t, k)
	return v.(*structKeys)
}
