package openai_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// testdata/items holds one recorded output item per type the Responses
// API defines (as openai-go v3's responses.ResponseOutputItemUnion lists
// them), plus hologram_call, a type no version defines: the unknown item.

// unknownType is the fixture of an item type no API version defines.
const unknownType = "hologram_call"

// outputItemVariants returns the variants of openai-go's output item
// union, read from its As… methods' result types.
func outputItemVariants(t *testing.T) []reflect.Type {
	t.Helper()
	u := reflect.TypeFor[responses.ResponseOutputItemUnion]()
	var variants []reflect.Type
	for m := range u.Methods() {
		if !strings.HasPrefix(m.Name, "As") || m.Name == "AsAny" || m.Type.NumOut() != 1 {
			continue
		}
		variants = append(variants, m.Type.Out(0))
	}
	if len(variants) < 20 {
		t.Fatalf("found only %d output item variants: %v", len(variants), variants)
	}
	return variants
}

// TestEveryOutputItemTypeHasFixture fails when openai-go defines an output
// item variant that no recorded fixture decodes to: an upgrade says what
// is new.
func TestEveryOutputItemTypeHasFixture(t *testing.T) {
	covered := map[reflect.Type]string{}
	for _, typ := range fixtureTypes(t) {
		var u responses.ResponseOutputItemUnion
		if err := json.Unmarshal(itemFixture(t, typ), &u); err != nil {
			t.Fatalf("testdata/items/%s.json: %v", typ, err)
		}
		if u.Type != typ {
			t.Errorf("testdata/items/%s.json has type %q", typ, u.Type)
		}
		if v := u.AsAny(); v != nil {
			covered[reflect.TypeOf(v)] = typ
		} else if typ != unknownType {
			t.Errorf("testdata/items/%s.json is no variant openai-go knows", typ)
		}
	}
	for _, v := range outputItemVariants(t) {
		if _, ok := covered[v]; ok {
			continue
		}
		typ := "?"
		if f, ok := v.FieldByName("Type"); ok && f.Tag.Get("default") != "" {
			typ = f.Tag.Get("default")
		}
		t.Errorf("output item variant %s (type %q) has no fixture in testdata/items: record one", v, typ)
	}
}

// fixtureTypes lists the fixtures: every item type, the unknown one last.
func fixtureTypes(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "items", "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var types []string
	for _, n := range names {
		if typ := strings.TrimSuffix(filepath.Base(n), ".json"); typ != unknownType {
			types = append(types, typ)
		}
	}
	return append(types, unknownType)
}

func itemFixture(t testing.TB, typ string) []byte {
	t.Helper()
	return readFile(t, filepath.Join("items", typ+".json"))
}

// fixtureKind is the kind the adapter gives an item of type typ.
func fixtureKind(typ string) state.Kind {
	switch typ {
	case "message":
		return state.KindAssistantMessage
	case "function_call":
		return state.KindToolCall
	case "reasoning":
		return state.KindReasoning
	case "mcp_approval_request":
		return state.KindMCPApprovalRequest
	case "custom_tool_call":
		return state.KindCustomCall
	case "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
		"mcp_call", "mcp_list_tools", "computer_call", "local_shell_call",
		"shell_call", "apply_patch_call", "tool_search_call":
		return state.KindHostedCall
	}
	return state.KindOpaque
}

// passThrough reports whether an item of type typ is recorded and replayed
// without the runner acting on it.
func passThrough(typ string) bool {
	k := fixtureKind(typ)
	return k == state.KindHostedCall || k == state.KindOpaque
}

// responseBody returns a completed Responses API response whose output is
// the given items.
func responseBody(t testing.TB, id string, items ...[]byte) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteString(`{"id":"` + id + `","object":"response","created_at":1760000000,"status":"completed","error":null,` +
		`"model":"gpt-5-mini-2025-08-07","output":[`)
	for i, it := range items {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(it)
	}
	out.WriteString(`],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}}`)
	if !json.Valid(out.Bytes()) {
		t.Fatalf("responseBody: invalid JSON")
	}
	return out.Bytes()
}

func replyBody(body []byte) reply { return reply{file: "responses_inline", body: body} }

// inputOf returns the input items of a recorded Responses request, each as
// the bytes the request carried.
func inputOf(t testing.TB, req request) []json.RawMessage {
	t.Helper()
	var body struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(req.body, &body); err != nil {
		t.Fatalf("request body: %v\n%s", err, req.body)
	}
	return body.Input
}

// TestRespondEveryItemType: every recorded item type, plain and streamed,
// comes back as an item of its kind whose JSON is the item as sent.
func TestRespondEveryItemType(t *testing.T) {
	for _, typ := range fixtureTypes(t) {
		for _, mode := range modes {
			t.Run(typ+"/"+mode.name, func(t *testing.T) {
				raw := itemFixture(t, typ)
				srv := newServer(t, replyBody(responseBody(t, "resp_"+typ, raw)))
				resp, err := openai.New(srv.client(0)).Respond(context.Background(), call(mode.stream))
				if err != nil {
					t.Fatalf("Respond: %v", err)
				}
				if len(resp.Items) != 1 {
					t.Fatalf("got %d items, want 1", len(resp.Items))
				}
				it := resp.Items[0]
				if it.Kind() != fixtureKind(typ) {
					t.Errorf("kind %s, want %s", it.Kind(), fixtureKind(typ))
				}
				if got, want := string(it.Raw()), compact(t, raw); got != want {
					t.Errorf("raw:\n got %s\nwant %s", got, want)
				}
				if passThrough(typ) && it.Name() != typ {
					t.Errorf("name %q, want the type %q", it.Name(), typ)
				}
			})
		}
	}
}

// mixedTurns is a run that mixes a function call, every item type the
// runner passes through and an unknown one in its first response, then
// answers.
func mixedTurns(t testing.TB, types []string) (first, final []byte, want []string) {
	t.Helper()
	items := [][]byte{itemFixture(t, "reasoning")}
	want = []string{"user_message", "reasoning"}
	for _, typ := range types {
		items = append(items, itemFixture(t, typ))
		want = append(want, fixtureKind(typ).String()+"("+typ+")")
	}
	items = append(items, []byte(`{"id":"fc_9","type":"function_call","status":"completed","call_id":"call_9","name":"get_weather","arguments":"{\"location\":\"Paris\"}"}`))
	want = append(want, "tool_call(get_weather)", "tool_output(get_weather)", "assistant_message")
	first = responseBody(t, "resp_1", items...)
	final = readFile(t, "responses_final.json")
	return first, final, want
}

func describe(items []state.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Kind().String()
		if it.Name() != "" {
			out[i] += "(" + it.Name() + ")"
		}
	}
	return out
}

// checkReplay checks that a request's input carries want's JSON, byte for
// byte, as consecutive elements in order.
func checkReplay(t *testing.T, what string, input []json.RawMessage, want []state.Item) {
	t.Helper()
	i := slices.IndexFunc(input, func(r json.RawMessage) bool { return string(r) == string(want[0].Raw()) })
	if i < 0 || len(input)-i < len(want) {
		t.Fatalf("%s: input does not carry %v as sent:\n%s", what, want[0], bytes.Join(rawBytes(input), []byte("\n")))
	}
	for j, it := range want {
		if string(input[i+j]) != string(it.Raw()) {
			t.Errorf("%s: input[%d] = %s, want %s", what, i+j, input[i+j], it.Raw())
		}
	}
}

func rawBytes(rs []json.RawMessage) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// passThroughTypes returns the fixtures the runner passes through.
func passThroughTypes(t *testing.T) []string {
	var types []string
	for _, typ := range fixtureTypes(t) {
		if passThrough(typ) {
			types = append(types, typ)
		}
	}
	return types
}

// TestHostedAndUnknownItemsRun runs a response that mixes reasoning, every
// hosted call and opaque item, an unknown type and a function call, plain
// and streamed, with a session: the items are recorded in model order,
// stored in the session in that order, replayed to the model unchanged on
// the next call and on the next run, and kept by a checkpoint.
// internal/crossbackend stores such a run in the real session backends.
func TestHostedAndUnknownItemsRun(t *testing.T) {
	types := passThroughTypes(t)
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			testMixedRun(t, mode.stream, memory.New(), types)
		})
	}
}

// TestHostedItemsEachType runs each pass-through type alone, so that a
// failure names the type.
func TestHostedItemsEachType(t *testing.T) {
	for _, typ := range passThroughTypes(t) {
		t.Run(typ, func(t *testing.T) {
			testMixedRun(t, false, memory.New(), []string{typ})
		})
	}
}

type closer interface{ Close() error }

func testMixedRun(t *testing.T, stream bool, store session.Store, types []string) {
	t.Helper()
	if c, ok := store.(closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	sid := "hosted-" + hex.EncodeToString(b[:])
	first, final, want := mixedTurns(t, types)
	srv := newServer(t, replyBody(first), reply{file: "responses_final.json"}, reply{file: "responses_text.json"})
	agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(0)), Tools: []pipeline.Tool{weather},
		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
	ctx := context.Background()
	_ = final

	var res *pipeline.Result
	if stream {
		for ev, err := range runner.Stream(ctx, agent, pipeline.UserInput("weather?"), pipeline.WithSessionID(sid)) {
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if rc, ok := ev.(pipeline.RunCompleted); ok {
				res = rc.Result
			}
		}
	} else {
		var err error
		if res, err = runner.Run(ctx, agent, pipeline.UserInput("weather?"), pipeline.WithSessionID(sid)); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	items := res.NewItems()
	if got := describe(items); !slices.Equal(got, want) {
		t.Fatalf("items in model order:\n got %v\nwant %v", got, want)
	}
	// Seq follows model order.
	for i := 1; i < len(items); i++ {
		if items[i].Seq() <= items[i-1].Seq() {
			t.Errorf("item %d at seq %d after seq %d", i, items[i].Seq(), items[i-1].Seq())
		}
	}
	resp := items[1 : len(items)-2] // reasoning … the function call
	// The next call replays them unchanged, in order.
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	checkReplay(t, "second call", inputOf(t, reqs[1]), resp)

	// The session holds them in model order, as sent.
	stored, err := store.List(ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(stored); !slices.Equal(got, want) {
		t.Fatalf("session:\n got %v\nwant %v", got, want)
	}
	for i := range stored {
		if !stored[i].Equal(items[i]) || stored[i].Text() != items[i].Text() || stored[i].CallID() != items[i].CallID() {
			t.Errorf("session item %d = %v %s, want %v %s", i, stored[i], stored[i].Raw(), items[i], items[i].Raw())
		}
	}

	// A checkpoint keeps them.
	data, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	back, err := state.Unmarshal(data)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	got := back.Items().Slice()
	for i := range items {
		if !got[i].Equal(items[i]) || got[i].Name() != items[i].Name() || got[i].Text() != items[i].Text() {
			t.Errorf("checkpoint item %d = %v, want %v", i, got[i], items[i])
		}
	}

	// The next run of the session replays them too.
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("and tomorrow?"), pipeline.WithSessionID(sid)); err != nil {
		t.Fatalf("second run: %v", err)
	}
	reqs = srv.Requests()
	checkReplay(t, "next run", inputOf(t, reqs[2]), resp)
}

// TestOutputGuardrailSeesHostedItems: an output guardrail gets the items of
// the final response, hosted calls and unknown items included, in model
// order; its tripwire discards the final message and keeps the hosted
// calls (they ran), in the session.
func TestOutputGuardrailSeesHostedItems(t *testing.T) {
	for _, trip := range []bool{false, true} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("trip=%v/%s", trip, mode.name), func(t *testing.T) {
				body := responseBody(t, "resp_g", itemFixture(t, "web_search_call"), itemFixture(t, unknownType), itemFixture(t, "message"))
				srv := newServer(t, replyBody(body))
				var seen []string
				check := func(_ context.Context, _ *pipeline.Agent, items []state.Item) (guardrails.Verdict, error) {
					seen = describe(items)
					if trip && slices.ContainsFunc(items, func(it state.Item) bool { return it.Name() == "web_search_call" }) {
						return guardrails.Trip("searched the web"), nil
					}
					return guardrails.Verdict{}, nil
				}
				store := memory.New()
				runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), guardrails.OutputItems(check)))
				agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(0)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
				var err error
				if mode.stream {
					for _, e := range runner.Stream(context.Background(), agent, pipeline.UserInput("news?"), pipeline.WithSessionID("s")) {
						if e != nil {
							err = e
						}
					}
				} else {
					_, err = runner.Run(context.Background(), agent, pipeline.UserInput("news?"), pipeline.WithSessionID("s"))
				}
				want := []string{"hosted_call(web_search_call)", "opaque(" + unknownType + ")", "assistant_message"}
				if !slices.Equal(seen, want) {
					t.Errorf("guardrail saw %v, want %v", seen, want)
				}
				stored, lerr := store.List(context.Background(), "s", 0)
				if lerr != nil {
					t.Fatal(lerr)
				}
				wantStored := append([]string{"user_message"}, want...)
				if trip {
					if !errors.Is(err, guardrails.ErrTripwire) {
						t.Fatalf("err = %v, want a tripwire", err)
					}
					wantStored = wantStored[:len(wantStored)-1]
				} else if err != nil {
					t.Fatal(err)
				}
				if got := describe(stored); !slices.Equal(got, wantStored) {
					t.Errorf("session %v, want %v", got, wantStored)
				}
			})
		}
	}
}
