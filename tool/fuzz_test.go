package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/pipeline"
)

// FuzzDecode checks that no argument text makes a tool panic, that every
// refusal is a *pipeline.ArgumentError naming the tool and call, and that
// what the tool accepts is what a reference decode gives (encoding/json
// into a fresh Order) and keeps the schema's constraints, checked here by
// hand. The seed corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(goodOrder)
	f.Add(`{"customer":"a","items":[{"sku":"a","qty":-129}],"priority":"low","note":"n","tags":[],"express":false,"weight":1e308}`)
	var got Order
	tl := orderTool(&got)
	f.Fuzz(func(t *testing.T, args string) {
		got = Order{}
		_, err := tl.Call(context.Background(), call(args))
		if err == nil {
			if strings.TrimSpace(args) != "" && !json.Valid([]byte(args)) {
				t.Fatalf("accepted invalid JSON %q", args)
			}
			checkAccepted(t, args, got)
			return
		}
		ae, ok := errors.AsType[*pipeline.ArgumentError](err)
		if !ok {
			t.Fatalf("error %v (%T) is not a *pipeline.ArgumentError", err, err)
		}
		if ae.Tool != "place_order" || ae.CallID != "call_1" || ae.Err == nil {
			t.Fatalf("error %#v does not name the tool, call and cause", ae)
		}
	})
}

// checkAccepted compares what the tool decoded from args with a reference
// decode, and checks the schema's constraints on it.
func checkAccepted(t *testing.T, args string, got Order) {
	t.Helper()
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	var ref Order
	if err := json.Unmarshal([]byte(args), &ref); err != nil {
		t.Fatalf("the tool accepted %q, which encoding/json refuses: %v", args, err)
	}
	if diff := cmp.Diff(ref, got); diff != "" {
		t.Fatalf("decoded %q differs from the reference decode (-ref +tool):\n%s", args, diff)
	}
	if len(got.Items) == 0 {
		t.Fatalf("accepted %q without items (minItems 1)", args)
	}
	for i, l := range got.Items {
		if l.SKU == "" || l.Qty < 1 {
			t.Fatalf("accepted %q with item %d = %+v (sku minLength 1, qty minimum 1)", args, i, l)
		}
	}
	if got.Priority != "low" && got.Priority != "high" {
		t.Fatalf("accepted %q with priority %q (enum low, high)", args, got.Priority)
	}
	if !(got.Weight > 0) {
		t.Fatalf("accepted %q with weight %v (exclusiveMinimum 0)", args, got.Weight)
	}
}
