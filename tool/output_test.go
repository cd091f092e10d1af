package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

type ticket struct {
	Title    string   `json:"title" jsonschema:"maxLength=20"`
	Priority string   `json:"priority" jsonschema:"enum=low,enum=high"`
	Tags     []string `json:"tags"`
	Due      *string  `json:"due"`
}

type withMeta struct {
	Title string            `json:"title"`
	Meta  map[string]string `json:"meta"`
}

type withAny struct {
	Inner struct {
		Payload any `json:"payload"`
	} `json:"inner"`
}

func TestOutputSpec(t *testing.T) {
	o, err := tool.Output[ticket](tool.OutputDescription("A support ticket."))
	if err != nil {
		t.Fatal(err)
	}
	spec := o.OutputSpec()
	if spec.Name != "ticket" || !spec.Strict || spec.Description != "A support ticket." || spec.Type.String() != "tool_test.ticket" {
		t.Errorf("spec = %+v", spec)
	}
	var schema struct {
		Required             []string        `json:"required"`
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	if err := json.Unmarshal(spec.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if strings.Join(schema.Required, ",") != "title,priority,tags,due" || string(schema.AdditionalProperties) != "false" {
		t.Errorf("schema not strict: %s", spec.Schema)
	}
	if o, _ := tool.Output[*ticket](tool.OutputName("Ticket_v2")); o.OutputSpec().Name != "Ticket_v2" {
		t.Errorf("OutputName not applied: %q", o.OutputSpec().Name)
	}
}

func TestOutputRefusesNonStrict(t *testing.T) {
	for _, tt := range []struct {
		name string
		make func(...tool.OutputOption) (pipeline.OutputType, error)
		path string
	}{
		{"map", tool.Output[withMeta], "meta"},
		{"any", tool.Output[withAny], "inner.payload"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.make()
			var se *tool.StrictError
			if !errors.As(err, &se) || se.Path != tt.path || !errors.Is(err, tool.ErrNotStrict) {
				t.Fatalf("err = %v, want a StrictError at %s", err, tt.path)
			}
			if !strings.Contains(err.Error(), "field "+tt.path) {
				t.Errorf("error %q does not name the field", err)
			}
			o, err := tt.make(tool.AllowNonStrict())
			if err != nil {
				t.Fatal(err)
			}
			if o.OutputSpec().Strict {
				t.Error("a non-strict type is sent strict")
			}
		})
	}
	if _, err := tool.Output[string](); err == nil {
		t.Error("a string output type was accepted")
	}
}

func TestOutputDecode(t *testing.T) {
	o := tool.MustOutput[ticket]()
	v, err := o.Decode(`{"title":"printer","priority":"high","tags":null,"due":"2026-01-02"}`)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(ticket)
	if got.Title != "printer" || got.Tags != nil || got.Due == nil || *got.Due != "2026-01-02" {
		t.Errorf("decoded %+v", got)
	}
	for _, tt := range []struct {
		text, path string
		offset     bool
	}{
		{`{"title":"printer","priority":"urgent","tags":[],"due":null}`, "priority", false},
		{`{"title":"printer","priority":"low","tags":[1],"due":null}`, "tags[0]", false},
		{`{"title":"printer","priority":"low","tags":[],"due":null,"extra":1}`, "extra", false},
		{`{"title":"printer", "priority":`, "", true},
		{`   `, "", false},
	} {
		_, err := o.Decode(tt.text)
		var oe *pipeline.OutputError
		if !errors.As(err, &oe) || !errors.Is(err, pipeline.ErrInvalidOutput) {
			t.Errorf("Decode(%s) = %v, want an OutputError", tt.text, err)
			continue
		}
		if oe.Path != tt.path || oe.Raw != tt.text || (oe.Offset > 0) != tt.offset {
			t.Errorf("Decode(%s): path %q offset %d raw %q", tt.text, oe.Path, oe.Offset, oe.Raw)
		}
	}
}

func TestFuncResultType(t *testing.T) {
	tl := tool.Func("t", "", func(_ context.Context, in struct{}) (ticket, error) { return ticket{}, nil })
	rt, ok := tl.(pipeline.ResultTyper)
	if !ok || rt.ResultType().String() != "tool_test.ticket" {
		t.Errorf("ResultType = %v, %v", rt, ok)
	}
}
