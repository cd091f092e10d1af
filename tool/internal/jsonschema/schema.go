// Package jsonschema reflects Go types into the JSON Schema that tool
// sends to a model as a function's parameters or an output's format.
//
// It knows the shapes encoding/json gives a Go value (field names from
// the json tag, flattened embedded structs, []byte as base64, time.Time
// as a date-time string) and reads the `jsonschema:"..."` tag keys that
// package tool documents. The schemas are written without $ref, $defs,
// $schema or $id, every struct closed (additionalProperties false);
// package tool then makes them strict-mode compatible and compiles the
// validator.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"iter"
	"reflect"
)

// A Schema is one JSON Schema object. Its fields are written in the order
// they are declared, which is the order the schemas have always been sent
// in; the zero Schema is written as true (any value).
type Schema struct {
	AnyOf                []*Schema          `json:"anyOf,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	Properties           *Properties        `json:"properties,omitempty"`
	PatternProperties    map[string]*Schema `json:"patternProperties,omitempty"`
	AdditionalProperties *Schema            `json:"additionalProperties,omitempty"`
	Type                 string             `json:"type,omitempty"`
	Enum                 []any              `json:"enum,omitempty"`
	MultipleOf           json.Number        `json:"multipleOf,omitempty"`
	Maximum              json.Number        `json:"maximum,omitempty"`
	ExclusiveMaximum     json.Number        `json:"exclusiveMaximum,omitempty"`
	Minimum              json.Number        `json:"minimum,omitempty"`
	ExclusiveMinimum     json.Number        `json:"exclusiveMinimum,omitempty"`
	MaxLength            *uint64            `json:"maxLength,omitempty"`
	MinLength            *uint64            `json:"minLength,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	MaxItems             *uint64            `json:"maxItems,omitempty"`
	MinItems             *uint64            `json:"minItems,omitempty"`
	UniqueItems          bool               `json:"uniqueItems,omitempty"`
	Required             []string           `json:"required,omitempty"`
	Format               string             `json:"format,omitempty"`
	ContentEncoding      string             `json:"contentEncoding,omitempty"`
	Title                string             `json:"title,omitempty"`
	Description          string             `json:"description,omitempty"`
	Default              any                `json:"default,omitempty"`
	Examples             []any              `json:"examples,omitempty"`

	// never is set on the schema no value matches, written as false.
	never bool
}

// False returns the schema no value matches (written as false), such as
// a closed object's additionalProperties.
func False() *Schema { return &Schema{never: true} }

// IsFalse reports whether s matches no value.
func (s *Schema) IsFalse() bool { return s != nil && s.never }

// MarshalJSON writes s as a schema object, false for [False] and true for
// the zero Schema.
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s.never {
		return []byte("false"), nil
	}
	if reflect.ValueOf(*s).IsZero() {
		return []byte("true"), nil
	}
	type plain Schema // without this method
	return json.Marshal((*plain)(s))
}

// Properties are an object's properties in the order of the Go fields
// they come from.
type Properties struct {
	names  []string
	byName map[string]*Schema
}

// NewProperties returns an empty set of properties.
func NewProperties() *Properties { return &Properties{byName: map[string]*Schema{}} }

// Len returns the number of properties.
func (p *Properties) Len() int { return len(p.names) }

// Get returns the schema of the property name, if there is one.
func (p *Properties) Get(name string) (*Schema, bool) {
	s, ok := p.byName[name]
	return s, ok
}

// Set sets the schema of the property name: a new property goes last, a
// known one keeps its place.
func (p *Properties) Set(name string, s *Schema) {
	if _, ok := p.byName[name]; !ok {
		p.names = append(p.names, name)
	}
	p.byName[name] = s
}

// All yields the properties in order.
func (p *Properties) All() iter.Seq2[string, *Schema] {
	return func(yield func(string, *Schema) bool) {
		for _, name := range p.names {
			if !yield(name, p.byName[name]) {
				return
			}
		}
	}
}

// MarshalJSON writes the properties as one JSON object, in order.
func (p *Properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range p.names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.byName[name])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
