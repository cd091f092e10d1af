package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
)

// FuzzDecode checks that no argument text makes a tool panic, and that
// every refusal is a *pipeline.ArgumentError naming the tool and call.
// The seed corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(goodOrder)
	f.Add(`{"customer":"a","items":[{"sku":"a","qty":-129}],"priority":"low","note":"n","tags":[],"express":false,"weight":1e308}`)
	var got Order
	tl := orderTool(&got)
	f.Fuzz(func(t *testing.T, args string) {
		_, err := tl.Call(context.Background(), call(args))
		if err == nil {
			if strings.TrimSpace(args) != "" && !json.Valid([]byte(args)) {
				t.Fatalf("accepted invalid JSON %q", args)
			}
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
