package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

type Line struct {
	SKU string `json:"sku" jsonschema:"minLength=1"`
	Qty int8   `json:"qty" jsonschema:"minimum=1"`
}

type Order struct {
	Customer string   `json:"customer"`
	Items    []Line   `json:"items" jsonschema:"minItems=1"`
	Priority string   `json:"priority" jsonschema:"enum=low,enum=high"`
	Note     *string  `json:"note"`
	Tags     []string `json:"tags,omitempty"`
	Express  bool     `json:"express"`
	Weight   float64  `json:"weight" jsonschema:"exclusiveMinimum=0"`
}

func call(args string) *pipeline.ToolCall {
	return &pipeline.ToolCall{Name: "place_order", CallID: "call_1", Arguments: args}
}

func orderTool(got *Order) pipeline.Tool {
	return tool.Func("place_order", "Places an order.", func(ctx context.Context, in Order) (string, error) {
		*got = in
		return "ok", nil
	})
}

func TestSchemaIsStrict(t *testing.T) {
	var o Order
	spec := orderTool(&o).Spec()
	if !spec.Strict {
		t.Errorf("Strict = false, want true for a struct of plain fields")
	}
	var got map[string]any
	if err := json.Unmarshal(spec.Parameters, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"customer": map[string]any{"type": "string"},
			"items": map[string]any{
				"type":     "array",
				"minItems": 1.0,
				"items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"sku": map[string]any{"type": "string", "minLength": 1.0},
						"qty": map[string]any{"type": "integer", "minimum": 1.0},
					},
					"required":             []any{"sku", "qty"},
					"additionalProperties": false,
				},
			},
			"priority": map[string]any{"type": "string", "enum": []any{"low", "high"}},
			"note":     map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "null"}}},
			"tags":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"express":  map[string]any{"type": "boolean"},
			"weight":   map[string]any{"type": "number", "exclusiveMinimum": 0.0},
		},
		"required":             []any{"customer", "items", "priority", "note", "tags", "express", "weight"},
		"additionalProperties": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"$ref", "$defs", "$schema", "$id", "oneOf"} {
		if strings.Contains(string(spec.Parameters), bad) {
			t.Errorf("schema contains %s: %s", bad, spec.Parameters)
		}
	}
}

func TestSchemaNotStrict(t *testing.T) {
	type withMap struct {
		Labels map[string]string `json:"labels"`
	}
	type withAny struct {
		Value any `json:"value"`
	}
	type plain struct {
		A string `json:"a"`
	}
	tests := []struct {
		name string
		tool pipeline.Tool
		want bool
	}{
		{"map", tool.Func("m", "", func(context.Context, withMap) (string, error) { return "", nil }), false},
		{"any", tool.Func("a", "", func(context.Context, withAny) (string, error) { return "", nil }), false},
		{"WithStrict(false)", tool.Func("p", "", func(context.Context, plain) (string, error) { return "", nil }, tool.WithStrict(false)), false},
		{"plain", tool.Func("p", "", func(context.Context, plain) (string, error) { return "", nil }), true},
		{"pointer input", tool.Func("p", "", func(context.Context, *plain) (string, error) { return "", nil }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tool.Spec().Strict; got != tt.want {
				t.Errorf("Strict = %v, want %v (schema %s)", got, tt.want, tt.tool.Spec().Parameters)
			}
		})
	}
}

const goodOrder = `{"customer":"ada","items":[{"sku":"a","qty":1},{"sku":"b","qty":2}],"priority":"low","note":null,"tags":["x"],"express":true,"weight":1.5}`

func TestDecodeValid(t *testing.T) {
	var got Order
	out, err := orderTool(&got).Call(context.Background(), call(goodOrder))
	if err != nil {
		t.Fatal(err)
	}
	if out != "ok" {
		t.Errorf("output = %q, want ok", out)
	}
	want := Order{Customer: "ada", Items: []Line{{"a", 1}, {"b", 2}}, Priority: "low", Tags: []string{"x"}, Express: true, Weight: 1.5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	note := "leave at door"
	b, _ := json.Marshal(map[string]any{"customer": "ada", "items": []Line{{"a", 1}}, "priority": "high", "note": note, "tags": []string{}, "express": false, "weight": 2})
	if _, err := orderTool(&got).Call(context.Background(), call(string(b))); err != nil {
		t.Fatal(err)
	}
	if got.Note == nil || *got.Note != note {
		t.Errorf("note = %v, want %q", got.Note, note)
	}
}

// replace returns goodOrder with one top-level property replaced (or
// removed when value is "").
func replace(key, value string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(goodOrder), &m)
	if value == "" {
		delete(m, key)
	} else {
		m[key] = json.RawMessage(value)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		path    string
		offset  int64
		errText string
	}{
		{"truncated", `{"customer":`, "", 12, "unexpected end of JSON input"},
		{"bad token", `{"customer" "x"}`, "", 13, "invalid character"},
		{"trailing data", goodOrder + ` {}`, "", int64(len(goodOrder)) + 2, "after top-level value"},
		{"null slice", replace("tags", `null`), "tags", 0, "want array, got null"},
		{"not an object", `[1,2]`, "", 0, "want object, got array"},
		{"unknown property", replace("custmer", `"x"`), "custmer", 0, "unknown property"},
		{"missing property", replace("customer", ""), "customer", 0, "missing property"},
		{"wrong type", replace("customer", `7`), "customer", 0, "want string, got integer"},
		{"null not allowed", replace("customer", `null`), "customer", 0, "want string, got null"},
		{"nested index", replace("items", `[{"sku":"a","qty":1},{"sku":"b","qty":1},{"sku":"c","qty":"2"}]`), "items[2].qty", 0, "want integer, got string"},
		{"nested unknown", replace("items", `[{"sku":"a","qty":1,"price":3}]`), "items[0].price", 0, "unknown property"},
		{"nested missing", replace("items", `[{"qty":1}]`), "items[0].sku", 0, "missing property"},
		{"integer overflow", replace("items", `[{"sku":"a","qty":300}]`), "items[0].qty", 0, "does not fit in int8"},
		{"fraction for integer", replace("items", `[{"sku":"a","qty":1.5}]`), "items[0].qty", 0, "want an integer"},
		{"minimum", replace("items", `[{"sku":"a","qty":0}]`), "items[0].qty", 0, "less than the minimum"},
		{"minLength", replace("items", `[{"sku":"","qty":1}]`), "items[0].sku", 0, "at least 1"},
		{"minItems", replace("items", `[]`), "items", 0, "want at least 1"},
		{"enum", replace("priority", `"urgent"`), "priority", 0, `"urgent" is not one of ["low", "high"]`},
		{"exclusiveMinimum", replace("weight", `0`), "weight", 0, "not more than 0"},
		{"quoted key", replace("a b", `1`), `["a b"]`, 0, "unknown property"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Order
			_, err := orderTool(&got).Call(context.Background(), call(tt.args))
			ae, ok := errors.AsType[*pipeline.ArgumentError](err)
			if !ok {
				t.Fatalf("error = %v (%T), want *pipeline.ArgumentError", err, err)
			}
			if !errors.Is(err, pipeline.ErrInvalidArguments) {
				t.Errorf("errors.Is(err, ErrInvalidArguments) = false")
			}
			if ae.Tool != "place_order" || ae.CallID != "call_1" {
				t.Errorf("Tool, CallID = %q, %q; want place_order, call_1", ae.Tool, ae.CallID)
			}
			if ae.Path != tt.path {
				t.Errorf("Path = %q, want %q", ae.Path, tt.path)
			}
			if ae.Offset != tt.offset {
				t.Errorf("Offset = %d, want %d", ae.Offset, tt.offset)
			}
			if !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("error %q does not contain %q", err, tt.errText)
			}
		})
	}
}

func TestEmptyArgumentsAreAnEmptyObject(t *testing.T) {
	type none struct{}
	called := 0
	tl := tool.Func("ping", "", func(context.Context, none) (string, error) { called++; return "pong", nil })
	for _, args := range []string{"", "  ", "{}"} {
		if out, err := tl.Call(context.Background(), call(args)); err != nil || out != "pong" {
			t.Errorf("Call(%q) = %q, %v; want pong, nil", args, out, err)
		}
	}
	if called != 3 {
		t.Errorf("called %d times, want 3", called)
	}
}

func TestOutputTypes(t *testing.T) {
	type in struct{}
	type forecast struct {
		City  string `json:"city"`
		TempC int    `json:"temp_c"`
	}
	tests := []struct {
		name string
		tool pipeline.Tool
		want string
	}{
		{"string", tool.Func("s", "", func(context.Context, in) (string, error) { return "plain", nil }), "plain"},
		{"struct", tool.Func("s", "", func(context.Context, in) (forecast, error) { return forecast{"Oslo", 3}, nil }), `{"city":"Oslo","temp_c":3}`},
		{"int", tool.Func("s", "", func(context.Context, in) (int, error) { return 42, nil }), `42`},
		{"slice", tool.Func("s", "", func(context.Context, in) ([]string, error) { return []string{"a"}, nil }), `["a"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.tool.Call(context.Background(), call("{}"))
			if err != nil || got != tt.want {
				t.Errorf("Call = %q, %v; want %q, nil", got, err, tt.want)
			}
		})
	}
	bad := tool.Func("s", "", func(context.Context, in) (func(), error) { return func() {}, nil })
	if _, err := bad.Call(context.Background(), call("{}")); err == nil || !strings.Contains(err.Error(), "marshal output") {
		t.Errorf("unmarshalable output: err = %v, want a marshal error", err)
	}
}

func TestFuncErrorPassesThrough(t *testing.T) {
	type in struct{}
	boom := errors.New("boom")
	tl := tool.Func("s", "", func(context.Context, in) (string, error) { return "", boom })
	if _, err := tl.Call(context.Background(), call("{}")); !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

func TestNeedsApproval(t *testing.T) {
	type in struct {
		Path string `json:"path"`
	}
	fn := func(context.Context, in) (string, error) { return "", nil }
	byPath := func(_ context.Context, c *pipeline.ToolCall) (bool, error) {
		return strings.Contains(c.Arguments, "/etc"), nil
	}
	failing := func(context.Context, *pipeline.ToolCall) (bool, error) { return false, errors.New("policy down") }
	tests := []struct {
		name      string
		tool      pipeline.Tool
		requirer  bool
		args      string
		want, err bool
	}{
		{"none", tool.Func("t", "", fn), false, "", false, false},
		{"always", tool.Func("t", "", fn, tool.NeedsApproval(true)), true, `{"path":"/tmp"}`, true, false},
		{"never", tool.Func("t", "", fn, tool.NeedsApproval(false)), true, `{"path":"/etc"}`, false, false},
		{"func yes", tool.Func("t", "", fn, tool.NeedsApprovalFunc(byPath)), true, `{"path":"/etc"}`, true, false},
		{"func no", tool.Func("t", "", fn, tool.NeedsApprovalFunc(byPath)), true, `{"path":"/tmp"}`, false, false},
		{"func error", tool.Func("t", "", fn, tool.NeedsApprovalFunc(failing)), true, `{}`, false, true},
		{"last wins", tool.Func("t", "", fn, tool.NeedsApprovalFunc(byPath), tool.NeedsApproval(true)), true, `{"path":"/tmp"}`, true, false},
		{"nil func ignored", tool.Func("t", "", fn, tool.NeedsApprovalFunc(nil)), false, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ar, ok := tt.tool.(pipeline.ApprovalRequirer)
			if ok != tt.requirer {
				t.Fatalf("is ApprovalRequirer = %v, want %v", ok, tt.requirer)
			}
			if !ok {
				return
			}
			got, err := ar.NeedsApproval(context.Background(), call(tt.args))
			if got != tt.want || (err != nil) != tt.err {
				t.Errorf("NeedsApproval = %v, %v; want %v, error %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestCallFromContext(t *testing.T) {
	type in struct{}
	var key string
	tl := tool.Func("s", "", func(ctx context.Context, _ in) (string, error) {
		c, ok := tool.CallFromContext(ctx)
		if !ok {
			return "", errors.New("no call in context")
		}
		key = c.IdempotencyKey()
		return "", nil
	})
	if _, ok := tool.CallFromContext(context.Background()); ok {
		t.Errorf("CallFromContext(Background) reported a call")
	}
	c := call("{}")
	c.Turn = &pipeline.Turn{Run: state.NewRun("run_1", "a")}
	if _, err := tl.Call(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if key != "run_1/call_1" {
		t.Errorf("IdempotencyKey = %q, want run_1/call_1", key)
	}
}

func TestFuncPanicsOnWiringMistakes(t *testing.T) {
	type node struct {
		Children []node `json:"children"`
	}
	type ok struct{}
	tests := []struct {
		name string
		make func()
		want string
	}{
		{"nil func", func() { tool.Func[ok, string]("t", "", nil) }, "nil func"},
		{"empty name", func() { tool.Func("", "", func(context.Context, ok) (string, error) { return "", nil }) }, "must match"},
		{"bad name", func() { tool.Func("get weather", "", func(context.Context, ok) (string, error) { return "", nil }) }, "must match"},
		{"not a struct", func() { tool.Func("t", "", func(context.Context, string) (string, error) { return "", nil }) }, "not a struct"},
		{"recursive", func() { tool.Func("t", "", func(context.Context, node) (string, error) { return "", nil }) }, "recursive"},
		{"chan field", func() {
			tool.Func("t", "", func(context.Context, struct {
				C chan int `json:"c"`
			}) (string, error) {
				return "", nil
			})
		}, "chan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				v := recover()
				s, _ := v.(string)
				if !strings.HasPrefix(s, "tool: ") || !strings.Contains(s, tt.want) {
					t.Errorf("panic = %v, want a \"tool: \" message containing %q", v, tt.want)
				}
			}()
			tt.make()
		})
	}
}

func TestDecodedThroughRunner(t *testing.T) {
	var got Order
	bad := `{"customer":"ada","items":[{"sku":"a","qty":"one"}],"priority":"low","note":null,"tags":[],"express":false,"weight":1}`
	newAgent := func() *pipeline.Agent {
		return &pipeline.Agent{Name: "shop", Tools: []pipeline.Tool{orderTool(&got)}, Model: scripted.New(
			scripted.CallTool("place_order", bad),
			scripted.Reply("sorry"),
		)}
	}

	_, err := pipeline.NewRunner().Run(context.Background(), newAgent(), pipeline.UserInput("order"))
	ae, ok := errors.AsType[*pipeline.ArgumentError](err)
	if !ok || ae.Path != "items[0].qty" || ae.Tool != "place_order" || ae.CallID == "" {
		t.Fatalf("Run error = %v, want *ArgumentError at items[0].qty naming the tool and call", err)
	}

	res, err := pipeline.NewRunner(pipeline.WithInvalidCallsToModel()).Run(context.Background(), newAgent(), pipeline.UserInput("order"))
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, it := range res.NewItems() {
		if it.Kind() == state.KindToolOutput {
			outputs = append(outputs, it.Text())
		}
	}
	if len(outputs) != 1 || !strings.Contains(outputs[0], "items[0].qty: want integer, got string") {
		t.Errorf("tool outputs = %q, want the argument error reported to the model", outputs)
	}
}
