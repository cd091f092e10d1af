package gemini_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/state"
)

// argsSent sends a call with the arguments args (and its output) and
// returns the call's args as the request carried them, or the error.
func argsSent(t *testing.T, srv *server, args string) (any, error) {
	t.Helper()
	before := len(srv.got())
	m := gemini.New(srv.client())
	if _, err := call(t, m, false, state.ToolCall("", "c1", "f", args), state.ToolOutput("c1", "f", "done")); err != nil {
		return nil, err
	}
	contents := srv.got()[before].Body["contents"].([]any)
	part := contents[0].(map[string]any)["parts"].([]any)[0].(map[string]any)
	return part["functionCall"].(map[string]any)["args"], nil
}

// sentAs returns what the request carries for arguments that read as
// args: nothing for no members (the client omits an empty map).
func sentAs(args map[string]any) any {
	if len(args) == 0 {
		return nil
	}
	return args
}

// A call's arguments reach the API as encoding/json reads them: every
// member, nested values, escaped and duplicate keys (the last wins),
// numbers, white space; the adapter hands the client each member's raw
// JSON rather than decoded values.
func TestCallArguments(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{name: "empty", give: ``},
		{name: "empty object", give: ` { } `},
		{name: "one string", give: `{"location":"Paris"}`},
		{name: "escapes", give: `{"q":"a \"quoted\" \\ word\u00e9\n","path":"C:\\tmp"}`},
		{name: "escaped key", give: `{"lo\u0063ation":"Oslo","\"k\"":1}`},
		{name: "duplicate keys", give: `{"a":1,"a":2,"b":[1],"b":{"c":3}}`},
		{name: "numbers", give: `{"i":42,"f":-3.25e-2,"big":12345678901234567890,"z":-0,"e":1E+300}`},
		{name: "literals", give: `{"t":true,"f":false,"n":null}`},
		{name: "nested", give: `{"o":{"a":[1,{"b":"}],"},[]],"c":{}},"s":"{[,"}`},
		{name: "white space", give: "\n{ \"a\" :\t1 ,\r\n \"b\" : [ 1 , 2 ] , \"c\" : \"x\" \n}\t"},
		{name: "HTML", give: `{"h":"<b>&amp;</b>"}`},
		{name: "invalid UTF-8 key", give: "{\"k\xff\":1,\"k\xfe\":2}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := map[string]any{}
			if tt.give != "" {
				if err := json.Unmarshal([]byte(tt.give), &want); err != nil {
					t.Fatal(err)
				}
			}
			got, err := argsSent(t, newServer(t, okReply), tt.give)
			if err != nil {
				t.Fatalf("Respond: %v", err)
			}
			if diff := cmp.Diff(sentAs(want), got); diff != "" {
				t.Errorf("args sent for %s (-want +got):\n%s", tt.give, diff)
			}
		})
	}
}

// Arguments that are not a JSON object the client can decode are refused
// before the request, naming the call.
func TestCallArgumentsRefused(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{name: "array", give: `[1,2]`},
		{name: "truncated", give: `{"a":"b"`},
		{name: "missing value", give: `{"a":}`},
		{name: "trailing text", give: `{"a":1} {"b":2}`},
		{name: "number out of range", give: `{"a":1e400}`},
		{name: "nested number out of range", give: `{"a":[{"b":-2e308}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, okReply)
			_, err := argsSent(t, srv, tt.give)
			ie, ok := errors.AsType[*gemini.InputError](err)
			if !ok || ie.Index != 0 || ie.CallID != "c1" {
				t.Fatalf("error %v, want an *InputError for item 0, call c1", err)
			}
			if n := len(srv.got()); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
}

// FuzzCallArguments sends any argument text: it is refused with an
// *InputError exactly when it is not white space alone and encoding/json
// cannot read it as an object, and otherwise reaches the API as
// encoding/json reads it.
func FuzzCallArguments(f *testing.F) {
	for _, seed := range []string{``, ` `, `{}`, `null`, `{"a":"b"}`, `{"a":[1,{"b":null}],"a":true}`, `{"\u0061":1e400}`, `[1]`, `{"a":1}x`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		want := map[string]any{}
		var wantErr error
		switch t := strings.TrimSpace(args); {
		case t == "":
		case t[0] != '{':
			wantErr = errors.New("not an object")
		default:
			wantErr = json.Unmarshal([]byte(t), &want)
		}
		got, err := argsSent(t, newServer(t, okReply), args)
		if _, ok := errors.AsType[*gemini.InputError](err); (wantErr != nil) != ok || err != nil && !ok {
			t.Fatalf("args %q: error %v, want an *InputError exactly when encoding/json says %v", args, err, wantErr)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(sentAs(want), got); diff != "" {
			t.Errorf("args sent for %q (-want +got):\n%s", args, diff)
		}
	})
}

// An output that names no function takes the name of the call it answers,
// the last call with its ID before it, whether that call came before or
// after an earlier such output.
func TestOutputNamedByItsCall(t *testing.T) {
	got := contentsOf(t,
		state.ToolCall("", "c1", "get_weather", `{}`), state.ToolOutput("c1", "", "sunny"),
		state.ToolCall("", "c2", "get_time", `{}`), state.ToolCall("", "c1", "get_wind", `{}`),
		state.ToolOutput("c2", "", "noon"), state.ToolOutput("c1", "", "calm"),
	)
	want := jsonOf(t, `[
		{"role":"model","parts":[{"functionCall":{"id":"c1","name":"get_weather"}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"get_weather","response":{"output":"sunny"}}}]},
		{"role":"model","parts":[{"functionCall":{"id":"c2","name":"get_time"}},{"functionCall":{"id":"c1","name":"get_wind"}}]},
		{"role":"user","parts":[
			{"functionResponse":{"id":"c2","name":"get_time","response":{"output":"noon"}}},
			{"functionResponse":{"id":"c1","name":"get_wind","response":{"output":"calm"}}}
		]}
	]`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}
