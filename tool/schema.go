package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool/internal/jsonschema"
)

// A schema is an input type's JSON schema, as sent to the model, and the
// validator compiled from it. It is built once per tool and only read
// afterwards, so it is safe for concurrent use.
type schema struct {
	json   json.RawMessage
	root   *node
	strict bool // the schema can be used in strict mode
	// notStrict is the JSON path of the first value strict mode cannot
	// describe, and notStrictWhy says why, when strict is false.
	notStrict, notStrictWhy string
}

// jsonType is a JSON value type, as a bit so that a node can allow several.
type jsonType uint8

const (
	typeNull jsonType = 1 << iota
	typeBool
	typeInteger
	typeNumber
	typeString
	typeArray
	typeObject
)

func (t jsonType) String() string {
	switch t {
	case typeNull:
		return "null"
	case typeBool:
		return "boolean"
	case typeInteger:
		return "integer"
	case typeNumber:
		return "number"
	case typeString:
		return "string"
	case typeArray:
		return "array"
	case typeObject:
		return "object"
	}
	return "any"
}

var typeNames = map[string]jsonType{
	"null": typeNull, "boolean": typeBool, "integer": typeInteger, "number": typeNumber,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// A node validates one value. The zero node accepts anything.
type node struct {
	typ      jsonType // 0: any type
	nullable bool
	anyOf    []*node

	// objects
	props    map[string]*node
	order    []string // property names in schema order
	closed   bool     // no other properties
	extra    *node    // schema of other properties (a map's values)
	keyMatch *regexp.Regexp

	// arrays
	items              *node
	minItems, maxItems *uint64

	// strings
	minLen, maxLen *uint64
	pattern        *regexp.Regexp

	// numbers
	min, max         *float64
	exclMin, exclMax *float64
	bits             int  // Go integer size, 0 if unknown
	unsigned         bool // Go unsigned integer

	enum []any
}

// ErrUnsupportedType means a Go type cannot be an input or output type:
// it is not a struct, it contains itself, it holds a value JSON cannot
// carry (a channel, a func, a complex number) or its `jsonschema` tags do
// not fit its fields. It is wrapped by [*TypeError].
var ErrUnsupportedType = errors.New("tool: type has no JSON schema")

// A TypeError reports an input or output type that has no JSON schema,
// and where: Path is the JSON path of the field at fault ("" for the type
// itself), such as "lines[].when".
type TypeError struct {
	Type   string // the input or output type, as Go prints it
	What   string // "input" or "output"
	Path   string
	Reason string // such as "chan int has no JSON schema"
}

// Error names the type, the field's path and the reason.
func (e *TypeError) Error() string { return "tool: " + e.detail() }

// detail is the message without the package's prefix.
func (e *TypeError) detail() string {
	if e.Path == "" {
		return fmt.Sprintf("%s type %s: %s", e.What, e.Type, e.Reason)
	}
	return fmt.Sprintf("%s type %s: field %s: %s", e.What, e.Type, e.Path, e.Reason)
}

// Unwrap returns [ErrUnsupportedType].
func (e *TypeError) Unwrap() error { return ErrUnsupportedType }

// newSchema reflects t (a struct or a pointer to one) into a strict-mode
// schema and compiles its validator.
func newSchema(t reflect.Type) (*schema, *TypeError) {
	return reflectSchema(t, "input", false)
}

// reflectSchema reflects t, the input or output type (what says which),
// into a strict-mode schema and compiles its validator; nilOK accepts null
// for slices and maps. A type that has no schema is a [*TypeError].
func reflectSchema(t reflect.Type, what string, nilOK bool) (*schema, *TypeError) {
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base.Kind() != reflect.Struct {
		return nil, &TypeError{Type: t.String(), What: what, Reason: "not a struct"}
	}
	c := compiler{strict: true, nilOK: nilOK}
	var root *node
	js, err := jsonschema.Reflect(base)
	if err == nil {
		root, err = c.compile(base, js, "")
	}
	if err != nil {
		te := &TypeError{Type: t.String(), What: what, Reason: err.Error()}
		if je, ok := errors.AsType[*jsonschema.Error](err); ok {
			te.Path, te.Reason = je.Path, je.Reason
		}
		return nil, te
	}
	b, err := json.Marshal(js)
	if err != nil {
		return nil, &TypeError{Type: t.String(), What: what, Reason: "marshal schema: " + err.Error()}
	}
	return &schema{json: b, root: root, strict: c.strict, notStrict: c.notStrict, notStrictWhy: c.notStrictWhy}, nil
}

type compiler struct {
	strict bool
	// notStrict says where and why the schema cannot be strict: the first
	// place found.
	notStrict, notStrictWhy string
	// nilOK accepts null for slices and maps, as encoding/json writes nil
	// ones: for outputs, which a terminal tool may have marshalled.
	nilOK bool
}

// loose records that the schema at path cannot be used in strict mode.
func (c *compiler) loose(path, why string) {
	if c.strict {
		c.strict, c.notStrict, c.notStrictWhy = false, path, why
	}
}

// compile builds the validator of s, whose Go type is t (nil when the
// schema does not follow the Go type's shape). It makes s strict-mode
// compatible on the way: all properties required, pointer fields
// nullable, structs closed.
func (c *compiler) compile(t reflect.Type, s *jsonschema.Schema, path string) (*node, error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n := &node{}
	if len(s.AnyOf) > 0 {
		for _, alt := range s.AnyOf {
			an, err := c.compile(t, alt, path)
			if err != nil {
				return nil, err
			}
			n.anyOf = append(n.anyOf, an)
		}
		return n, nil
	}
	if s.Type == "" {
		c.loose(path, "any value (an interface or json.RawMessage) cannot be described") // any value: json.RawMessage, interface types
		return n, nil
	}
	typ, ok := typeNames[s.Type]
	if !ok {
		return nil, &jsonschema.Error{Path: path, Reason: fmt.Sprintf("unsupported schema type %q", s.Type)}
	}
	n.typ = typ
	n.enum = s.Enum
	if c.nilOK && t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Map) {
		n.nullable = true
	}
	var err error
	switch typ {
	case typeObject:
		err = c.compileObject(n, t, s, path)
	case typeArray:
		err = c.compileArray(n, t, s, path)
	case typeString:
		err = compileString(n, s, path)
	case typeInteger, typeNumber:
		err = compileNumber(n, t, s, path)
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// compileArray builds n's item validator and length bounds.
func (c *compiler) compileArray(n *node, t reflect.Type, s *jsonschema.Schema, path string) error {
	n.minItems, n.maxItems = s.MinItems, s.MaxItems
	if s.Items == nil {
		return nil
	}
	var et reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		et = t.Elem()
	}
	items, err := c.compile(et, s.Items, path+"[]")
	if err != nil {
		return err
	}
	n.items = items
	return nil
}

// compileString sets n's length bounds and pattern.
func compileString(n *node, s *jsonschema.Schema, path string) error {
	n.minLen, n.maxLen = s.MinLength, s.MaxLength
	if s.Pattern == "" {
		return nil
	}
	re, err := regexp.Compile(s.Pattern)
	if err != nil {
		return &jsonschema.Error{Path: path, Reason: fmt.Sprintf("pattern %q: %v", s.Pattern, err)}
	}
	n.pattern = re
	return nil
}

// compileNumber sets n's bounds, and the bit size and sign of the Go
// integer type t, if it is one.
func compileNumber(n *node, t reflect.Type, s *jsonschema.Schema, path string) error {
	if t != nil {
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n.bits = t.Bits()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			n.bits, n.unsigned = t.Bits(), true
		}
	}
	for _, b := range []struct {
		dst **float64
		v   json.Number
	}{{&n.min, s.Minimum}, {&n.max, s.Maximum}, {&n.exclMin, s.ExclusiveMinimum}, {&n.exclMax, s.ExclusiveMaximum}} {
		if b.v == "" {
			continue
		}
		f, err := b.v.Float64()
		if err != nil {
			return &jsonschema.Error{Path: path, Reason: fmt.Sprintf("bound %q: %v", b.v, err)}
		}
		*b.dst = &f
	}
	return nil
}

// compileObject builds n's property validators (all required, pointer
// fields nullable) and what it does with other keys.
func (c *compiler) compileObject(n *node, t reflect.Type, s *jsonschema.Schema, path string) error {
	if err := c.compileProps(n, t, s, path); err != nil {
		return err
	}
	var elem reflect.Type // a map's value type
	if t != nil && t.Kind() == reflect.Map {
		elem = t.Elem()
	}
	switch {
	case len(s.PatternProperties) > 0:
		c.loose(path, "a map has no fixed properties")
		if len(s.PatternProperties) != 1 {
			return &jsonschema.Error{Path: path, Reason: "more than one pattern property"}
		}
		for pat, ps := range s.PatternProperties {
			re, err := regexp.Compile(pat)
			if err != nil {
				return &jsonschema.Error{Path: path, Reason: fmt.Sprintf("property pattern %q: %v", pat, err)}
			}
			extra, err := c.compile(elem, ps, path+"{}")
			if err != nil {
				return err
			}
			n.keyMatch, n.extra, n.closed = re, extra, true
		}
	case s.AdditionalProperties == nil:
		if elem != nil {
			c.loose(path, "a map has no fixed properties") // a map of any values
		} else {
			// A struct: closed, for strict mode and for DisallowUnknownFields.
			s.AdditionalProperties = jsonschema.False()
			n.closed = true
		}
	case s.AdditionalProperties.IsFalse():
		n.closed = true
	default:
		if elem != nil {
			c.loose(path, "a map has no fixed properties")
		} else {
			c.loose(path, "an object with additional properties has no fixed properties")
		}
		extra, err := c.compile(elem, s.AdditionalProperties, path+"{}")
		if err != nil {
			return err
		}
		n.extra = extra
	}
	return nil
}

// compileProps builds the validators of s's properties, in their order,
// and makes them all required, as strict mode has it: a pointer field
// becomes nullable instead of optional.
func (c *compiler) compileProps(n *node, t reflect.Type, s *jsonschema.Schema, path string) error {
	if s.Properties == nil || s.Properties.Len() == 0 {
		return nil
	}
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = jsonschema.Fields(t)
	}
	n.props = make(map[string]*node, s.Properties.Len())
	required := make([]string, 0, s.Properties.Len())
	for name, ps := range s.Properties.All() {
		ft := fields[name]
		child, err := c.compile(ft, ps, jsonschema.JoinKey(path, name))
		if err != nil {
			return err
		}
		if ft != nil && ft.Kind() == reflect.Pointer && !child.allowsNull() {
			// An optional argument: strict mode has every property
			// required, so optional means nullable. (Setting a known
			// property keeps the order All goes through.)
			s.Properties.Set(name, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{ps, {Type: "null"}}})
			child.nullable = true
		}
		n.props[name] = child
		n.order = append(n.order, name)
		required = append(required, name)
	}
	s.Required = required
	return nil
}

func (n *node) allowsNull() bool {
	if n.nullable || n.typ == 0 && len(n.anyOf) == 0 || n.typ == typeNull {
		return true
	}
	for _, a := range n.anyOf {
		if a.allowsNull() {
			return true
		}
	}
	return false
}

// decode validates the arguments and decodes them into dst. It returns an
// error without the tool and call, which the caller fills in.
func (s *schema) decode(args string, dst any) *pipeline.ArgumentError {
	if strings.TrimSpace(args) == "" {
		args = "{}" // a call without arguments
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err != nil {
		return syntaxError([]byte(args), err)
	}
	if err := s.root.validate(v, ""); err != nil {
		return err
	}
	typed := json.NewDecoder(strings.NewReader(args))
	typed.DisallowUnknownFields()
	if err := typed.Decode(dst); err != nil {
		// The validator accepts what the schema allows; what it cannot
		// see (a custom UnmarshalJSON, a time format) fails here.
		ae := &pipeline.ArgumentError{Err: err}
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			ae.Path = te.Field
		}
		return ae
	}
	return nil
}

// syntaxError reports JSON that does not parse, with the offset
// encoding/json gives, as the runner's own check does.
func syntaxError(args []byte, err error) *pipeline.ArgumentError {
	var v any
	if uerr := json.Unmarshal(args, &v); uerr != nil {
		err = uerr
	}
	ae := &pipeline.ArgumentError{Err: err}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		ae.Offset = se.Offset
	}
	return ae
}

func invalid(path, format string, args ...any) *pipeline.ArgumentError {
	return &pipeline.ArgumentError{Path: path, Err: fmt.Errorf(format, args...)}
}

// validate checks v, a value decoded with UseNumber, and returns the first
// problem with its path.
func (n *node) validate(v any, path string) *pipeline.ArgumentError {
	if v == nil && n.allowsNull() {
		return nil
	}
	if len(n.anyOf) > 0 {
		var first *pipeline.ArgumentError
		for _, a := range n.anyOf {
			err := a.validate(v, path)
			if err == nil {
				return nil
			}
			if first == nil && a.typ != typeNull {
				first = err
			}
		}
		return first
	}
	got := typeOf(v)
	if n.typ != 0 && got != n.typ && !(n.typ == typeNumber && got == typeInteger) {
		if n.typ == typeInteger && got == typeNumber {
			return invalid(path, "want an integer, got %s", v)
		}
		return invalid(path, "want %s, got %s", n.typ, got)
	}
	if len(n.enum) > 0 && !inEnum(v, n.enum) {
		return invalid(path, "%s is not one of %s", short(v), enumList(n.enum))
	}
	switch x := v.(type) {
	case map[string]any:
		return n.validateObject(x, path)
	case []any:
		if n.minItems != nil && uint64(len(x)) < *n.minItems {
			return invalid(path, "has %d items, want at least %d", len(x), *n.minItems)
		}
		if n.maxItems != nil && uint64(len(x)) > *n.maxItems {
			return invalid(path, "has %d items, want at most %d", len(x), *n.maxItems)
		}
		if n.items != nil {
			for i, e := range x {
				if err := n.items.validate(e, path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	case string:
		l := uint64(len([]rune(x)))
		if n.minLen != nil && l < *n.minLen {
			return invalid(path, "has %d characters, want at least %d", l, *n.minLen)
		}
		if n.maxLen != nil && l > *n.maxLen {
			return invalid(path, "has %d characters, want at most %d", l, *n.maxLen)
		}
		if n.pattern != nil && !n.pattern.MatchString(x) {
			return invalid(path, "%s does not match %s", short(x), n.pattern)
		}
	case json.Number:
		return n.validateNumber(x, path)
	}
	return nil
}

func (n *node) validateObject(x map[string]any, path string) *pipeline.ArgumentError {
	var others []string // the properties the schema does not name, sorted
	if n.closed || n.extra != nil {
		others = make([]string, 0, len(x))
		for k := range x {
			if _, known := n.props[k]; !known {
				others = append(others, k)
			}
		}
		slices.Sort(others)
	}
	if n.closed {
		for _, k := range others {
			if n.keyMatch == nil || !n.keyMatch.MatchString(k) {
				return invalid(jsonschema.JoinKey(path, k), "unknown property")
			}
		}
	}
	for _, k := range n.order {
		e, ok := x[k]
		if !ok {
			return invalid(jsonschema.JoinKey(path, k), "missing property")
		}
		if err := n.props[k].validate(e, jsonschema.JoinKey(path, k)); err != nil {
			return err
		}
	}
	if n.extra != nil {
		for _, k := range others {
			if err := n.extra.validate(x[k], jsonschema.JoinKey(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (n *node) validateNumber(x json.Number, path string) *pipeline.ArgumentError {
	if n.typ == typeInteger && n.bits > 0 {
		var err error
		if n.unsigned {
			_, err = strconv.ParseUint(string(x), 10, n.bits)
		} else {
			_, err = strconv.ParseInt(string(x), 10, n.bits)
		}
		if err != nil {
			kind := "int"
			if n.unsigned {
				kind = "uint"
			}
			return invalid(path, "%s does not fit in %s%d", x, kind, n.bits)
		}
	}
	f, err := x.Float64()
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return invalid(path, "bad number %s: %v", x, err)
	}
	switch {
	case n.min != nil && f < *n.min:
		return invalid(path, "%s is less than the minimum %v", x, *n.min)
	case n.max != nil && f > *n.max:
		return invalid(path, "%s is more than the maximum %v", x, *n.max)
	case n.exclMin != nil && f <= *n.exclMin:
		return invalid(path, "%s is not more than %v", x, *n.exclMin)
	case n.exclMax != nil && f >= *n.exclMax:
		return invalid(path, "%s is not less than %v", x, *n.exclMax)
	}
	return nil
}

func typeOf(v any) jsonType {
	switch x := v.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBool
	case string:
		return typeString
	case []any:
		return typeArray
	case map[string]any:
		return typeObject
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return typeInteger
		}
		if _, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return typeInteger
		}
		if !strings.ContainsAny(string(x), ".eE") {
			return typeInteger // an integer too large for 64 bits
		}
		return typeNumber
	}
	return 0
}

func inEnum(v any, enum []any) bool {
	for _, e := range enum {
		switch x := v.(type) {
		case string:
			if s, ok := e.(string); ok && s == x {
				return true
			}
		case json.Number:
			f, err := x.Float64()
			if g, ok := toFloat(e); ok && err == nil && f == g {
				return true
			}
		case bool:
			if b, ok := e.(bool); ok && b == x {
				return true
			}
		}
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil && !math.IsInf(f, 0)
	}
	return 0, false
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = short(e)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// short renders a value for an error message, cut to a readable length.
func short(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = strconv.Quote(x)
	default:
		s = fmt.Sprint(x)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
