package crossbackend_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// fixtures is model/openai's folder of recorded Responses API payloads:
// one output item per type in items/, and whole responses.
const fixtures = "../../model/openai/testdata"

// TestHostedItemsSessionBackends stores a run whose response mixes every
// item the OpenAI adapter passes through (hosted calls, opaque and unknown
// items) with reasoning and a function call in each real session backend:
// the session gives them back in model order, byte for byte, and the next
// run replays them to the model unchanged. model/openai's own tests check
// the same run on the in-memory store, plain and streamed.
func TestHostedItemsSessionBackends(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "session.db"))
		if err != nil {
			t.Fatal(err)
		}
		testMixedRun(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		s, err := postgres.Open(context.Background(), testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
		if err != nil {
			t.Fatal(err)
		}
		testMixedRun(t, s)
	})
	t.Run("redis", func(t *testing.T) {
		s, err := redis.Open(context.Background(), testenv.ServerURL(t, "TURNKIT_REDIS_URL"))
		if err != nil {
			t.Fatal(err)
		}
		testMixedRun(t, s)
	})
}

type closer interface{ Close() error }

func testMixedRun(t *testing.T, store session.Store) {
	t.Helper()
	if c, ok := store.(closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	sid := "hosted-" + hex.EncodeToString(b[:])
	ctx := context.Background()

	first := mixedResponse(t)
	srv := newServer(t, first, readFixture(t, "responses_final.json"), readFixture(t, "responses_text.json"))
	agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client()), Tools: []pipeline.Tool{weather},
		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))

	res, err := runner.Run(ctx, agent, pipeline.UserInput("weather?"), pipeline.WithSessionID(sid))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	items := res.NewItems()
	resp := items[1 : len(items)-2] // reasoning … the function call
	if len(resp) < 3 || resp[0].Kind() != state.KindReasoning || resp[len(resp)-1].Kind() != state.KindToolCall {
		t.Fatalf("run items %v: want the user message, reasoning … a function call, its output, the answer", items)
	}

	stored, err := store.List(ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(items) {
		t.Fatalf("session holds %d items, the run made %d", len(stored), len(items))
	}
	for i := range stored {
		if !stored[i].Equal(items[i]) || stored[i].Kind() != items[i].Kind() || stored[i].Name() != items[i].Name() ||
			stored[i].Text() != items[i].Text() || stored[i].CallID() != items[i].CallID() {
			t.Errorf("session item %d = %v %s, want %v %s", i, stored[i], stored[i].Raw(), items[i], items[i].Raw())
		}
	}

	// The next run of the session replays them to the model as sent.
	if _, err := runner.Run(ctx, agent, pipeline.UserInput("and tomorrow?"), pipeline.WithSessionID(sid)); err != nil {
		t.Fatalf("second run: %v", err)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	checkReplay(t, inputOf(t, reqs[2]), resp)
}

// mixedResponse returns a completed response whose output is reasoning,
// every recorded item type the adapter passes through (hosted calls,
// opaque items and the unknown type), then a function call.
func mixedResponse(t *testing.T) []byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(fixtures, "items", "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no item fixtures in %s: %v", fixtures, err)
	}
	var all []json.RawMessage
	for _, n := range names {
		all = append(all, readFixture(t, filepath.Join("items", filepath.Base(n))))
	}
	// Which items pass through is the adapter's decision: ask it.
	srv := newServer(t, responseBody(t, "resp_probe", all))
	probe, err := openai.New(srv.client()).Respond(context.Background(), &pipeline.ModelCall{
		Agent: &pipeline.Agent{Name: "assistant"}, Input: state.ItemsOf(pipeline.UserInput("probe")),
		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
	})
	if err != nil {
		t.Fatalf("probe Respond: %v", err)
	}
	out := []json.RawMessage{readFixture(t, "items/reasoning.json")}
	for i, it := range probe.Items {
		if k := it.Kind(); k == state.KindHostedCall || k == state.KindOpaque {
			out = append(out, all[i])
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d items pass through; the fixtures changed", len(out)-1)
	}
	out = append(out, json.RawMessage(`{"id":"fc_9","type":"function_call","status":"completed","call_id":"call_9","name":"get_weather","arguments":"{\"location\":\"Paris\"}"}`))
	return responseBody(t, "resp_1", out)
}

// responseBody returns a completed Responses API response whose output is
// items.
func responseBody(t *testing.T, id string, items []json.RawMessage) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"id": id, "object": "response", "created_at": 1760000000, "status": "completed", "error": nil,
		"model": "gpt-5-mini-2025-08-07", "output": items,
		"usage": json.RawMessage(`{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

var weather = pipeline.NewTool(pipeline.ToolSpec{
	Name: "get_weather", Description: "Get the weather for a location.", Strict: true,
	Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}`),
}, func(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct{ Location string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	return "sunny in " + a.Location, nil
})

// checkReplay checks that a request's input carries want's JSON, byte for
// byte, as consecutive elements in order.
func checkReplay(t *testing.T, input []json.RawMessage, want []state.Item) {
	t.Helper()
	i := slices.IndexFunc(input, func(r json.RawMessage) bool { return string(r) == string(want[0].Raw()) })
	if i < 0 || len(input)-i < len(want) {
		t.Fatalf("next run: input does not carry %v as sent", want[0])
	}
	for j, it := range want {
		if string(input[i+j]) != string(it.Raw()) {
			t.Errorf("next run: input[%d] = %s, want %s", i+j, input[i+j], it.Raw())
		}
	}
}

// inputOf returns the input items of a recorded Responses request, each as
// the bytes the request carried.
func inputOf(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	return req.Input
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

// A server answers Responses API requests (not streamed) with the given
// bodies in order and records each request's body.
type server struct {
	srv *httptest.Server

	mu     sync.Mutex
	bodies [][]byte
	got    [][]byte
}

func newServer(t *testing.T, bodies ...[]byte) *server {
	t.Helper()
	s := &server{bodies: bodies}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, body)
		if len(s.bodies) == 0 {
			s.mu.Unlock()
			http.Error(w, `{"error":{"message":"fake server: no reply left","type":"test"}}`, http.StatusTeapot)
			return
		}
		reply := s.bodies[0]
		s.bodies = s.bodies[1:]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) client() sdk.Client {
	return sdk.NewClient(option.WithBaseURL(s.srv.URL+"/v1/"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(s.srv.Client()), option.WithMaxRetries(0))
}

func (s *server) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}
