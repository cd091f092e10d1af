package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

// The comparison behind tool/mcp's doc on one JSON Schema implementation:
// tool.Func's validator against the go-sdk's github.com/google/jsonschema-go
// validating the same arguments against the same schema (the one tool.Func
// sends the model), then decoding them.

type orderLine struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty" jsonschema:"minimum=1"`
}

type order struct {
	Customer string      `json:"customer"`
	Lines    []orderLine `json:"lines"`
}

var (
	goodOrder = json.RawMessage(`{"customer":"ada","lines":[{"sku":"a","qty":1},{"sku":"b","qty":2},{"sku":"c","qty":3}]}`)
	badOrder  = json.RawMessage(`{"customer":"ada","lines":[{"sku":"a","qty":1},{"sku":"b","qty":2},{"sku":"c","qty":0}]}`)
)

func orderTool() pipeline.Tool {
	return tool.Func("place_order", "Places an order.", func(_ context.Context, in order) (int, error) { return len(in.Lines), nil })
}

// resolvedOrderSchema resolves, with jsonschema-go, the schema tool.Func
// sends the model for orderTool.
func resolvedOrderSchema(tb testing.TB) *jsonschema.Resolved {
	tb.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(orderTool().Spec().Parameters, &s); err != nil {
		tb.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return rs
}

func jsonschemaGoCall(rs *jsonschema.Resolved, args json.RawMessage) (int, error) {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return 0, err
	}
	if err := rs.Validate(v); err != nil {
		return 0, err
	}
	var in order
	if err := json.Unmarshal(args, &in); err != nil {
		return 0, err
	}
	return len(in.Lines), nil
}

func orderCall(args json.RawMessage) *pipeline.ToolCall {
	return &pipeline.ToolCall{Name: "place_order", CallID: "call_1", Arguments: string(args), Item: state.ToolCall("fc_1", "call_1", "place_order", string(args))}
}

// TestSchemaErrorPaths records what each implementation says of the same
// bad argument: tool.Func names the value's JSON path (lines[2].qty) in a
// *pipeline.ArgumentError; jsonschema-go's error names it as a JSON
// Pointer inside its message.
func TestSchemaErrorPaths(t *testing.T) {
	_, err := orderTool().Call(context.Background(), orderCall(badOrder))
	var ae *pipeline.ArgumentError
	if !errors.As(err, &ae) || ae.Path != "lines[2].qty" {
		t.Fatalf("tool.Func: %v, want an ArgumentError at lines[2].qty", err)
	}
	_, gerr := jsonschemaGoCall(resolvedOrderSchema(t), badOrder)
	if gerr == nil {
		t.Fatal("jsonschema-go accepted qty 0 under minimum 1")
	}
	t.Logf("tool.Func:     %v", err)
	t.Logf("jsonschema-go: %v", gerr)
	// jsonschema-go names the schema's path, not the value's: which line
	// is wrong is lost. When that changes, revisit the package doc.
	if msg := gerr.Error(); strings.Contains(msg, "/lines/2") || strings.Contains(msg, "lines[2]") {
		t.Errorf("jsonschema-go now names the bad value (%q): revisit tool/mcp's doc on one JSON Schema implementation", msg)
	}
	// Its inference takes a jsonschema tag as a description and refuses
	// the key=value tags tool.Func's schemas are written with.
	type unit struct {
		To string `json:"to" jsonschema:"enum=fahrenheit,enum=kelvin"`
	}
	if _, err := jsonschema.For[unit](nil); err == nil {
		t.Errorf("jsonschema-go now accepts tool.Func's tags: revisit tool/mcp's doc on one JSON Schema implementation")
	}
}

// BenchmarkSchemaValidation is one call's validation and decoding of the
// same arguments by each implementation.
func BenchmarkSchemaValidation(b *testing.B) {
	b.Run("tool.Func", func(b *testing.B) {
		t := orderTool()
		c := orderCall(goodOrder)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := t.Call(context.Background(), c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema-go", func(b *testing.B) {
		rs := resolvedOrderSchema(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonschemaGoCall(rs, goodOrder); err != nil {
				b.Fatal(err)
			}
		}
	})
}
