package jsonschema

import (
	"encoding"
	"encoding/json"
	"net"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// An Error reports a Go type that has no schema, and where.
type Error struct {
	Path   string // JSON path of the field ("" for the type itself), such as "items[].when"
	Reason string // such as "chan int has no JSON schema"
}

// Error returns the path and the reason.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return "field " + e.Path + ": " + e.Reason
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	urlType       = reflect.TypeFor[url.URL]()
	ipType        = reflect.TypeFor[net.IP]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// Reflect returns the schema of values of type t, as encoding/json writes
// and reads them. A recursive type, a channel, a func, a complex number
// or a `jsonschema` tag that cannot apply to its field is an [*Error].
func Reflect(t reflect.Type) (*Schema, error) {
	if c := findCycle(t, nil); c != "" {
		return nil, &Error{Reason: "recursive (" + c + ")"}
	}
	return typeSchema(t, "")
}

// typeSchema returns the schema of t, found at path.
func typeSchema(t reflect.Type, path string) (*Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType:
		return &Schema{Type: "string", Format: "date-time"}, nil
	case urlType:
		return &Schema{Type: "string", Format: "uri"}, nil
	case ipType:
		return &Schema{Type: "string", Format: "ipv4"}, nil
	case rawType:
		return &Schema{}, nil // any JSON value
	}
	switch t.Kind() {
	case reflect.Struct:
		return structSchema(t, path)
	case reflect.Slice, reflect.Array:
		return listSchema(t, path)
	case reflect.Map:
		return mapSchema(t, path)
	case reflect.Interface:
		return &Schema{}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Schema{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number"}, nil
	case reflect.Bool:
		return &Schema{Type: "boolean"}, nil
	case reflect.String:
		return &Schema{Type: "string"}, nil
	}
	return nil, &Error{Path: path, Reason: t.String() + " has no JSON schema"}
}

// listSchema returns the schema of a slice or array type: an array,
// bounded to its length for a Go array, or a base64 string for a byte
// slice as encoding/json writes one.
func listSchema(t reflect.Type, path string) (*Schema, error) {
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		p := reflect.PointerTo(t.Elem())
		if !p.Implements(marshalerType) && !p.Implements(textType) {
			return &Schema{Type: "string", ContentEncoding: "base64"}, nil
		}
	}
	items, err := typeSchema(t.Elem(), path+"[]")
	if err != nil {
		return nil, err
	}
	s := &Schema{Type: "array", Items: items}
	if t.Kind() == reflect.Array {
		n := uint64(t.Len())
		s.MinItems, s.MaxItems = &n, &n
	}
	return s, nil
}

// mapSchema returns the schema of a map type: an object whose keys are
// digits for signed integer keys, and whose values follow the map's value
// type unless it is an interface.
func mapSchema(t reflect.Type, path string) (*Schema, error) {
	s := &Schema{Type: "object"}
	if t.Elem().Kind() == reflect.Interface {
		return s, nil
	}
	values, err := typeSchema(t.Elem(), path+"{}")
	if err != nil {
		return nil, err
	}
	switch t.Key().Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.PatternProperties = map[string]*Schema{"^[0-9]+$": values}
		s.AdditionalProperties = False()
	default:
		s.AdditionalProperties = values
	}
	return s, nil
}

// structSchema returns the schema of a struct type: a closed object with
// a property for each field encoding/json writes, in field order.
func structSchema(t reflect.Type, path string) (*Schema, error) {
	s := &Schema{Type: "object", Properties: NewProperties(), AdditionalProperties: False()}
	for _, f := range fields(t) {
		at := JoinKey(path, f.name)
		ps, err := typeSchema(f.Type, at)
		if err != nil {
			return nil, err
		}
		nullable, err := applyTags(ps, f, at)
		if err != nil {
			return nil, err
		}
		if nullable {
			ps = &Schema{AnyOf: []*Schema{ps, {Type: "null"}}}
		}
		s.Properties.Set(f.name, ps)
	}
	return s, nil
}

// A field is a struct field as encoding/json sees it: its JSON name, the
// options of its json tag, and how deep it is in embedded structs.
type field struct {
	reflect.StructField
	name   string
	opts   string // after the name in the json tag, such as "omitempty,string"
	tagged bool   // the json tag names it
	depth  int
}

// fields returns the fields encoding/json writes for t, in its order: a
// name given by more than one field goes to the shallowest, or to the one
// tagged with it, and to none when that is ambiguous. Fields tagged
// `jsonschema:"-"` are left out.
func fields(t reflect.Type) []field {
	var all []field
	walk(t, 0, &all)
	out := make([]field, 0, len(all))
	for _, f := range all {
		if dominant(all, f) {
			out = append(out, f)
		}
	}
	return out
}

// dominant reports whether f is the field its name goes to among all.
func dominant(all []field, f field) bool {
	for _, g := range all {
		if g.name != f.name || slices.Equal(g.Index, f.Index) {
			continue
		}
		if g.depth < f.depth || g.depth == f.depth && (g.tagged || !f.tagged) {
			return false
		}
	}
	return true
}

// walk appends t's fields to out, those of embedded structs flattened.
func walk(t reflect.Type, depth int, out *[]field) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if skip, _, _ := strings.Cut(f.Tag.Get("jsonschema"), ","); tag == "-" || skip == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if !f.IsExported() && ft.Kind() != reflect.Struct {
				continue
			}
			if name == "" && ft.Kind() == reflect.Struct {
				before := len(*out)
				walk(ft, depth+1, out)
				for j := before; j < len(*out); j++ {
					(*out)[j].Index = append([]int{i}, (*out)[j].Index...)
				}
				continue
			}
		} else if !f.IsExported() {
			continue
		}
		tagged := name != ""
		if !tagged {
			name = f.Name
		}
		*out = append(*out, field{StructField: f, name: name, opts: opts, tagged: tagged, depth: depth})
	}
}

// Fields returns the Go types of the properties of struct type t's schema,
// by JSON name.
func Fields(t reflect.Type) map[string]reflect.Type {
	fs := fields(t)
	out := make(map[string]reflect.Type, len(fs))
	for _, f := range fs {
		out[f.name] = f.Type
	}
	return out
}

// findCycle returns a description of a path through which t contains
// itself, or "".
func findCycle(t reflect.Type, stack []reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return findCycle(t.Elem(), stack)
	case reflect.Struct:
	default:
		return ""
	}
	if i := slices.Index(stack, t); i >= 0 {
		names := make([]string, 0, len(stack)-i+1)
		for _, s := range stack[i:] {
			names = append(names, s.String())
		}
		return strings.Join(append(names, t.String()), " → ")
	}
	stack = append(stack, t)
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() || f.Anonymous {
			if c := findCycle(f.Type, stack); c != "" {
				return c
			}
		}
	}
	return ""
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// JoinKey appends an object key to a JSON path: "a.b", or a["x y"].
func JoinKey(path, key string) string {
	if !identifier.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
