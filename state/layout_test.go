package state

import (
	"slices"
	"testing"

	"github.com/turnkit/turnkit/internal/jsonscan"
)

// TestItemLayouts checks that each kind's layout names every member once,
// with the field it stands for, so that a kind's order changes only what
// a member costs, never what it means.
func TestItemLayouts(t *testing.T) {
	for k := range itemLayouts {
		lay := &itemLayouts[k]
		var names []string
		for i, key := range lay.keys {
			f := lay.fields[i]
			if f < 0 || int(f) >= numItemKeys || key.Name() != itemKeyNames[f] {
				t.Errorf("kind %v: key %d is %q for field %d", Kind(k), i, key.Name(), f)
			}
			names = append(names, key.Name())
		}
		slices.Sort(names)
		if len(slices.Compact(names)) != numItemKeys {
			t.Errorf("kind %v: keys %v, want each of %v once", Kind(k), names, itemKeyNames)
		}
	}
}

// TestItemMembersInOrder checks that the items the APIs and this
// package's constructors write walk their members in their layout's
// order, each key compared in place (no key scanned and looked up), and
// that the fast path reads them.
func TestItemMembersInOrder(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		raw  string
	}{
		{KindUserMessage, string(messageRaw("user", "hi"))},
		{KindSystemMessage, string(messageRaw("system", "be brief"))},
		{KindAssistantMessage, string(assistantRaw("msg_1", "hello"))},
		{KindToolCall, string(callRaw("fc_1", "call_1", "echo", `{"a":1}`))},
		{KindToolOutput, string(outputRaw("call_1", "done"))},
		{KindReasoning, `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}]}`},
		{KindToolCall, `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"echo","arguments":"{}","status":"completed"}`},
	} {
		s := jsonscan.Scanner{B: []byte(c.raw)}
		o := s.Object(itemLayouts[c.kind].keys[:])
		for o.Next(&s) {
			if o.Key != nil {
				t.Errorf("%v %s: key %q scanned, not compared in place", c.kind, c.raw, o.Key)
			}
			if !s.Value(1) {
				t.Fatalf("%v %s: bad value at %d", c.kind, c.raw, s.I)
			}
		}
		if !o.Done() {
			t.Errorf("%v %s: walk stopped at %d", c.kind, c.raw, s.I)
		}
		if _, ok := parseItemFast(c.kind, []byte(c.raw)); !ok {
			t.Errorf("%v %s: the fast path refused it", c.kind, c.raw)
		}
	}
}
