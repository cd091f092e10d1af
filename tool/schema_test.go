package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

func TestTypeErrors(t *testing.T) {
	t.Parallel()
	type node struct {
		Next *node `json:"next"`
	}
	tests := []struct {
		name       string
		input      func() (pipeline.InputType, error)
		path, want string
	}{
		{"not a struct", tool.Input[string], "", "not a struct"},
		{"recursive", tool.Input[node], "", "recursive"},
		{"chan", tool.Input[struct {
			C chan int `json:"c"`
		}], "c", "chan int has no JSON schema"},
		{"func", tool.Input[struct {
			F func() `json:"f"`
		}], "f", "func() has no JSON schema"},
		{"complex", tool.Input[struct {
			Z complex128 `json:"z"`
		}], "z", "complex128 has no JSON schema"},
		{"uintptr", tool.Input[struct{ P uintptr }], "P", "uintptr has no JSON schema"},
		{"nested in a slice", tool.Input[struct {
			Lines []struct {
				C chan string `json:"c"`
			} `json:"lines"`
		}], "lines[].c", "chan string"},
		{"map value", tool.Input[struct {
			M map[string]func() `json:"m"`
		}], "m{}", "func()"},
		{"unknown key", tool.Input[struct {
			A string `json:"a" jsonschema:"minimun=1"`
		}], "a", `unknown jsonschema tag key "minimun"`},
		{"unknown flag", tool.Input[struct {
			A string `json:"a" jsonschema:"optional"`
		}], "a", `unknown jsonschema tag key "optional"`},
		{"key of another type", tool.Input[struct {
			N int `json:"n" jsonschema:"maxLength=3"`
		}], "n", `"maxLength" does not apply to type integer`},
		{"key of items that have none", tool.Input[struct {
			L []struct{} `json:"l" jsonschema:"minimum=1"`
		}], "l", `"minimum" does not apply to type array`},
		{"not a number", tool.Input[struct {
			N float64 `json:"n" jsonschema:"minimum=one"`
		}], "n", `"one" is not a number`},
		{"not a count", tool.Input[struct {
			S string `json:"s" jsonschema:"maxLength=-1"`
		}], "s", `"-1" is not a count`},
		{"bad pattern", tool.Input[struct {
			S string `json:"s" jsonschema:"pattern=["`
		}], "s", "pattern"},
		{"extras tag", tool.Input[struct {
			S string `json:"s" jsonschema_extras:"x=1"`
		}], "s", "jsonschema_extras"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.input()
			te, ok := errors.AsType[*tool.TypeError](err)
			if !ok || !errors.Is(err, tool.ErrUnsupportedType) {
				t.Fatalf("err = %v, want a *tool.TypeError wrapping ErrUnsupportedType", err)
			}
			if te.Path != tt.path || !strings.Contains(te.Reason, tt.want) || te.What != "input" {
				t.Errorf("TypeError = %+v, want path %q and a reason containing %q", te, tt.path, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "tool: input type ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("message %q does not name the type and the reason", err)
			}
		})
	}
	_, err := tool.Output[struct {
		F func() `json:"f"`
	}]()
	if te, ok := errors.AsType[*tool.TypeError](err); !ok || te.What != "output" || te.Path != "f" {
		t.Errorf("Output of a func field: err = %v, want a *tool.TypeError at f", err)
	}
}

type jsonBase struct {
	ID     string `json:"id"`
	Name   string
	Shared string
}

type jsonOther struct {
	Shared string
}

type jsonAudit struct {
	By string `json:"by"`
}

type JSONMeta struct {
	Source string `json:"source"`
}

// jsonShapes holds what encoding/json has rules for: a field shadowing an
// embedded one, a name two embedded fields share at the same depth (left
// out), an embedded pointer (exported: encoding/json cannot set one to an unexported struct), the name "-", an ",inline" option (which
// encoding/json does not know), an unexported field and ",string".
type jsonShapes struct {
	jsonBase
	jsonOther
	*JSONMeta
	ID      string    `json:"id"`
	Dash    string    `json:"-,"`
	Audit   jsonAudit `json:"audit,inline"`
	Count   int       `json:"count,string"`
	Skipped bool      `json:"-"`
	hidden  int
}

// objectKeys returns the keys of a JSON object, in order.
func objectKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestSchemaFollowsEncodingJSON checks that the schema's properties are
// the keys encoding/json writes, in its order, and that what it writes
// passes validation and decodes back to the same value.
func TestSchemaFollowsEncodingJSON(t *testing.T) {
	t.Parallel()
	want := jsonShapes{
		jsonBase: jsonBase{ID: "shadowed", Name: "n"},
		JSONMeta: &JSONMeta{Source: "s"},
		ID:       "outer", Dash: "dash", Audit: jsonAudit{By: "ada"}, Count: 7,
	}
	args, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got jsonShapes
	echo := tool.Func("echo", "", func(_ context.Context, in jsonShapes) (string, error) {
		got = in
		return "", nil
	})
	var schema struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(echo.Spec().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if props, keys := objectKeys(t, schema.Properties), objectKeys(t, args); !slices.Equal(props, keys) {
		t.Errorf("schema properties %q, encoding/json writes %q", props, keys)
	}
	if _, err := echo.Call(context.Background(), &pipeline.ToolCall{Name: "echo", CallID: "c", Arguments: string(args)}); err != nil {
		t.Fatalf("Call(%s) = %v", args, err)
	}
	want.jsonBase.ID = "" // shadowed: encoding/json never writes or reads it
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v (meta %+v), want %+v (meta %+v)", got, got.JSONMeta, want, want.JSONMeta)
	}
}

func TestSchemaTagComma(t *testing.T) {
	t.Parallel()
	type args struct {
		City  string   `json:"city" jsonschema:"description=City name, e.g. Oslo,minLength=1"`
		Codes []string `json:"codes" jsonschema:"pattern=^[A-Z]{2\\,3}$,title=Codes, upper case,nullable"`
	}
	in, err := tool.Input[args]()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"properties":{"city":{"type":"string","minLength":1,"description":"City name, e.g. Oslo"},` +
		`"codes":{"anyOf":[{"items":{"type":"string","pattern":"^[A-Z]{2,3}$"},"type":"array","title":"Codes, upper case"},{"type":"null"}]}},` +
		`"additionalProperties":false,"type":"object","required":["city","codes"]}`
	if got := string(in.InputSpec().Schema); got != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
}
