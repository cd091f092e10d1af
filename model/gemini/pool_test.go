package gemini_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/state"
)

// history returns the items of a run named tag with rounds tool rounds,
// and the contents a request carries for them.
func history(tag string, rounds int) ([]state.Item, []any) {
	items := []state.Item{state.UserMessage("ask " + tag)}
	contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "ask " + tag}}}}
	for r := range rounds {
		id := fmt.Sprintf("%s-%d", tag, r)
		key := fmt.Sprintf("k%d", (len(tag)+r)%3) // keys differ between calls
		items = append(items, state.ToolCall("", id, "f", `{"`+key+`":"`+id+`","n":[`+fmt.Sprint(r)+`]}`), state.ToolOutput(id, "", "out "+id))
		contents = append(contents,
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{
				"id": id, "name": "f", "args": map[string]any{key: id, "n": []any{float64(r)}}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
				"id": id, "name": "f", "response": map[string]any{"output": "out " + id}}}}})
	}
	return items, contents
}

// Calls made at once on one Model, plain and streamed, with histories of
// different sizes,
// each send their own contents and nothing of another's: the builders the
// adapter reuses between calls are emptied and never shared.
func TestConcurrentCallsSendTheirOwnContents(t *testing.T) {
	const goroutines, calls = 6, 12
	replies := make([]reply, goroutines*calls)
	for i := range replies {
		replies[i] = reply{file: "by path"} // the plain or the streamed answer
	}
	srv := newServer(t, replies...)
	m := gemini.New(srv.client())
	want := map[string][]any{}
	var wg sync.WaitGroup
	for g := range goroutines {
		var inputs [][]state.Item
		for c := range calls {
			tag := fmt.Sprintf("g%d.c%d", g, c)
			items, contents := history(tag, (g+c)%5) // sizes up and down
			inputs, want["ask "+tag] = append(inputs, items), contents
		}
		wg.Go(func() {
			for c, items := range inputs {
				if _, err := call(t, m, c%2 == 0, items...); err != nil {
					t.Errorf("Respond: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for _, r := range srv.got() {
		got := r.Body["contents"].([]any)
		first := got[0].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string)
		if !strings.HasPrefix(first, "ask ") {
			t.Fatalf("first part %q, want a question", first)
		}
		if diff := cmp.Diff(want[first], got); diff != "" {
			t.Errorf("contents of the call %q (-want +got):\n%s", first, diff)
		}
	}
	if n := len(srv.got()); n != goroutines*calls {
		t.Errorf("%d requests, want %d", n, goroutines*calls)
	}
}

// A history longer than the builders the adapter keeps is sent whole, and
// so is a short one after it.
func TestLongHistorySent(t *testing.T) {
	srv := newServer(t, okReply, okReply)
	m := gemini.New(srv.client())
	long, wantLong := history("long", 2100)
	short, wantShort := history("short", 1)
	for _, items := range [][]state.Item{long, short} {
		if _, err := call(t, m, false, items...); err != nil {
			t.Fatalf("Respond: %v", err)
		}
	}
	for i, want := range [][]any{wantLong, wantShort} {
		if diff := cmp.Diff(want, srv.got()[i].Body["contents"]); diff != "" {
			t.Errorf("request %d's contents (-want +got):\n%s", i, diff)
		}
	}
}

// Arguments of many members, then a call with few, each reach the API
// whole, with nothing of the other's.
func TestManyArgumentsThenFew(t *testing.T) {
	srv := newServer(t, okReply, okReply)
	m := gemini.New(srv.client())
	many := map[string]any{}
	for i := range 100 {
		many[fmt.Sprintf("m%d", i)] = float64(i)
	}
	raw, err := json.Marshal(many)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{string(raw), `{"few":1}`} {
		if _, err := call(t, m, false, state.ToolCall("", "c1", "f", args), state.ToolOutput("c1", "f", "done")); err != nil {
			t.Fatalf("Respond: %v", err)
		}
	}
	for i, want := range []any{many, map[string]any{"few": float64(1)}} {
		part := srv.got()[i].Body["contents"].([]any)[0].(map[string]any)["parts"].([]any)[0].(map[string]any)
		if diff := cmp.Diff(want, part["functionCall"].(map[string]any)["args"]); diff != "" {
			t.Errorf("request %d's args (-want +got):\n%s", i, diff)
		}
	}
}
