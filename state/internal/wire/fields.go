package wire

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/turnkit/turnkit/internal/jsonscan"
)

// A Field is one member of a wire shape, as its struct tags declare it.
type Field struct {
	Name      string // the JSON name
	GoName    string // the struct field's name
	Index     int    // the struct field's index
	OmitEmpty bool
	Required  bool // tagged wire:"required"
}

// Fields is the table of a wire shape's members, in the order
// encoding/json writes them.
type Fields struct {
	List []Field
	// Keys are the members' keys, in List's order (see [Fields.Object]).
	Keys []jsonscan.Key
	// Required is the set of the required members' positions.
	Required FieldSet
}

// FieldsOf returns the table of struct type t's JSON members. It panics
// on a field without a json tag: every member of the format is named
// where it is declared.
func FieldsOf(t reflect.Type) *Fields {
	fs := &Fields{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("json")
		if !ok || tag == "-" {
			panic("wire: field " + t.Name() + "." + sf.Name + " has no JSON name")
		}
		name, opts, _ := strings.Cut(tag, ",")
		fs.List = append(fs.List, Field{
			Name: name, GoName: sf.Name, Index: i,
			OmitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"),
			Required:  sf.Tag.Get("wire") == "required",
		})
		fs.Keys = append(fs.Keys, jsonscan.MakeKey(name))
	}
	if len(fs.List) > maxFields {
		panic("wire: " + t.Name() + " has more fields than a FieldSet holds")
	}
	for i, f := range fs.List {
		if f.Required {
			fs.Required.First(i)
		}
	}
	return fs
}

// Object consumes the opening brace of an object of fs's members and
// returns the walk of its members (see [jsonscan.Object]): its Field is
// the member's position in List, or -1 for a key that is not exactly one
// (a fast path gives up there: an unknown member, or one encoding/json
// would match only by case folding). A key where Marshal writes it,
// after the member before in List's order, is matched in place.
func (fs *Fields) Object(s *jsonscan.Scanner) jsonscan.Object { return s.Object(fs.Keys) }

// Pos returns the position in List of the Go field goName. It panics if
// there is none, which a package's initialization then reports.
func (fs *Fields) Pos(goName string) int {
	for i, f := range fs.List {
		if f.GoName == goName {
			return i
		}
	}
	panic("wire: no field " + goName)
}

// Name returns the JSON name of the Go field goName; see [Fields.Pos].
func (fs *Fields) Name(goName string) string { return fs.List[fs.Pos(goName)].Name }

// Empty reports whether encoding/json's omitempty leaves v out.
func Empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

var rawType = reflect.TypeFor[json.RawMessage]()

// Decoded returns struct type t with each required field made a pointer,
// so that encoding/json, decoding into it, tells a missing field (nil)
// from a zero one. [Fill] copies a value of it into a t.
func Decoded(t reflect.Type) reflect.Type { return derive(t, false) }

// Raw returns [Decoded] of t with each list of objects a list of raw
// elements and each object member raw, so that decoding the elements one
// by one afterwards names the one that fails.
func Raw(t reflect.Type) reflect.Type { return derive(t, true) }

func derive(t reflect.Type, raw bool) reflect.Type {
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		sf := t.Field(i)
		switch {
		case sf.Tag.Get("wire") == "required":
			sf.Type = reflect.PointerTo(sf.Type)
		case raw && sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.Struct:
			sf.Type = reflect.SliceOf(rawType)
		case raw && sf.Type.Kind() == reflect.Struct:
			sf.Type = rawType
		}
		sf.Index, sf.Offset = nil, 0
		fields[i] = sf
	}
	return reflect.StructOf(fields)
}

// Fill copies src, a value of [Decoded] of dst's type, into dst (a
// pointer to the struct). It returns the JSON name of the first required
// field src does not have, or "".
func Fill(dst any, src reflect.Value, fs *Fields) (missing string) {
	d := reflect.ValueOf(dst).Elem()
	for _, f := range fs.List {
		v := src.Field(f.Index)
		if f.Required {
			if v.IsNil() {
				return f.Name
			}
			v = v.Elem()
		}
		d.Field(f.Index).Set(v)
	}
	return ""
}
