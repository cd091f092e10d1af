package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

// FuzzDecode checks that no argument text makes a tool panic, that every
// refusal is a *pipeline.ArgumentError naming the tool and call, and that
// arguments the tool accepts are valid JSON that encoding/json decodes
// into the same value (issues 27 and 35). The seed corpus is in
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(goodOrder)
	f.Add(`{"customer":"a","items":[{"sku":"a","qty":-129}],"priority":"low","note":"n","tags":[],"express":false,"weight":1e308}`)
	f.Add(`{"customer":"a","items":[{"sku":"a","qty":1}],"priority":"low","note":null,"express":false,"weight":0.5}`)
	f.Add(`{"customer":"\u00e9\ud83d\ude00","items":[{"sku":"a","qty":127}],"priority":"high","note":"","tags":null,"express":true,"weight":5e-324}`)
	var got Order
	tl := orderTool(&got)
	f.Fuzz(func(t *testing.T, args string) {
		got = Order{}
		_, err := tl.Call(context.Background(), call(args))
		if err != nil {
			ae, ok := errors.AsType[*pipeline.ArgumentError](err)
			if !ok {
				t.Fatalf("error %v (%T) is not a *pipeline.ArgumentError", err, err)
			}
			if ae.Tool != "place_order" || ae.CallID != "call_1" || ae.Err == nil {
				t.Fatalf("error %#v does not name the tool, call and cause", ae)
			}
			return
		}
		var want Order
		if strings.TrimSpace(args) != "" {
			if !json.Valid([]byte(args)) {
				t.Fatalf("accepted invalid JSON %q", args)
			}
			if err := json.Unmarshal([]byte(args), &want); err != nil {
				t.Fatalf("accepted %q, which encoding/json refuses: %v", args, err)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("decoded %q unlike encoding/json (-encoding/json +tool):\n%s", args, d)
		}
	})
}

// report is a structured output type with bounds, nesting and nulls.
type report struct {
	Title    string  `json:"title" jsonschema:"maxLength=20"`
	Priority string  `json:"priority" jsonschema:"enum=low,enum=high"`
	Count    int8    `json:"count" jsonschema:"minimum=0"`
	Score    float64 `json:"score"`
	Lines    []Line  `json:"lines"`
	Due      *string `json:"due"`
	Done     bool    `json:"done"`
}

// FuzzOutputDecode checks the decoding of a structured final output
// (tool.Output, which pipeline.OutputAs returns the value of): no text
// makes it panic, every refusal is a *pipeline.OutputError wrapping
// ErrInvalidOutput, what it accepts encoding/json decodes into the same
// value, and that value, encoded, decodes again equal.
func FuzzOutputDecode(f *testing.F) {
	f.Add(`{"title":"printer","priority":"high","count":3,"score":0.5,"lines":[{"sku":"a","qty":1}],"due":"2026-01-02","done":true}`)
	f.Add(`{"title":"printer","priority":"low","count":0,"score":-1e300,"lines":null,"due":null,"done":false}`)
	f.Add(`{"title":"printer","priority":"low","count":128,"score":1,"lines":[],"due":null,"done":false}`)
	f.Add(`{"title":"a very long title indeed","priority":"low","count":1,"score":1,"lines":[{"sku":"","qty":0}],"due":null,"done":false}`)
	f.Add(`{"Title":"x","priority":"low","count":1,"score":1,"lines":null,"due":null,"done":false}`)
	o := tool.MustOutput[report]()
	f.Fuzz(func(t *testing.T, text string) {
		v, err := o.Decode(text)
		if err != nil {
			var oe *pipeline.OutputError
			if !errors.As(err, &oe) || !errors.Is(err, pipeline.ErrInvalidOutput) {
				t.Fatalf("error %v (%T) is not an OutputError", err, err)
			}
			return
		}
		got, ok := v.(report)
		if !ok {
			t.Fatalf("decoded a %T", v)
		}
		var want report
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", text, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("decoded %q unlike encoding/json (-encoding/json +tool):\n%s", text, d)
		}
		saved, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := o.Decode(string(saved))
		if err != nil {
			t.Fatalf("the encoded output %s does not decode again: %v", saved, err)
		}
		if d := cmp.Diff(got, again); d != "" {
			t.Fatalf("output %s decodes again otherwise:\n%s", saved, d)
		}
	})
}
