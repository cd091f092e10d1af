package jsonschema

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
)

func TestMarshalBooleanSchemas(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    *Schema
		want string
	}{
		{&Schema{}, "true"},
		{False(), "false"},
		{&Schema{Type: "object", Properties: NewProperties(), AdditionalProperties: False()}, `{"properties":{},"additionalProperties":false,"type":"object"}`},
		{&Schema{AnyOf: []*Schema{{Type: "string"}, {Type: "null"}}}, `{"anyOf":[{"type":"string"},{"type":"null"}]}`},
	} {
		b, err := json.Marshal(tt.s)
		if err != nil || string(b) != tt.want {
			t.Errorf("Marshal = %s, %v; want %s", b, err, tt.want)
		}
	}
}

func TestPropertiesKeepTheirPlace(t *testing.T) {
	t.Parallel()
	p := NewProperties()
	p.Set("b", &Schema{Type: "string"})
	p.Set("a <&>", &Schema{Type: "integer"})
	p.Set("b", &Schema{Type: "boolean"}) // replaced where it stands
	var names []string
	for name := range p.All() {
		names = append(names, name)
	}
	if !slices.Equal(names, []string{"b", "a <&>"}) || p.Len() != 2 {
		t.Errorf("properties %q (Len %d), want [b a <&>]", names, p.Len())
	}
	if s, ok := p.Get("b"); !ok || s.Type != "boolean" {
		t.Errorf("Get(b) = %+v, %v; want the boolean schema", s, ok)
	}
	b, err := json.Marshal(p)
	if want := `{"b":{"type":"boolean"},"a \u003c\u0026\u003e":{"type":"integer"}}`; err != nil || string(b) != want {
		t.Errorf("Marshal = %s, %v; want %s", b, err, want)
	}
}

func TestSplitTag(t *testing.T) {
	t.Parallel()
	for tag, want := range map[string][]string{
		"":                        {""},
		"minimum=1,maximum=2":     {"minimum=1", "maximum=2"},
		`pattern=^a{1\,2}$,x=y`:   {"pattern=^a{1,2}$", "x=y"},
		`description=a\, b\, c`:   {"description=a, b, c"},
		`enum=a,,enum=b`:          {"enum=a", "", "enum=b"},
		`description=trailing\\,`: {`description=trailing\,`},
	} {
		if got := splitTag(tag); !slices.Equal(got, want) {
			t.Errorf("splitTag(%q) = %q, want %q", tag, got, want)
		}
	}
}

type inner struct {
	A string `json:"a"`
	B string
}

type twin struct {
	B string
}

// dominance has encoding/json's cases: A shadowed by a shallower field,
// B given at one depth by two untagged fields (left out).
type dominance struct {
	inner
	twin
	A string `json:"a"`
}

func TestFieldsFollowEncodingJSON(t *testing.T) {
	t.Parallel()
	fs := Fields(reflect.TypeFor[dominance]())
	if len(fs) != 1 || fs["a"] != reflect.TypeFor[string]() {
		t.Fatalf("Fields = %v, want only a", fs)
	}
	b, err := json.Marshal(dominance{inner: inner{A: "x", B: "x"}, twin: twin{B: "y"}, A: "z"})
	if err != nil || string(b) != `{"a":"z"}` {
		t.Fatalf("encoding/json wrote %s, %v: the case is not the one this test means", b, err)
	}
}

func TestReflectErrorsHaveAPath(t *testing.T) {
	t.Parallel()
	type bad struct {
		Rows [][]struct {
			Cells map[string]complex64 `json:"cells"`
		} `json:"rows"`
	}
	_, err := Reflect(reflect.TypeFor[bad]())
	var e *Error
	if !errors.As(err, &e) || e.Path != "rows[][].cells{}" || e.Reason != "complex64 has no JSON schema" {
		t.Fatalf("err = %v, want an *Error at rows[][].cells{}", err)
	}
	if err.Error() != "field rows[][].cells{}: complex64 has no JSON schema" {
		t.Errorf("message %q", err)
	}
}
