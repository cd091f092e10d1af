package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// sent is what one Responses request carried about the conversation.
type sent struct {
	Previous     string
	Conversation string
	Types        []string // the input items' types
}

func sentOf(t testing.TB, req request) sent {
	t.Helper()
	var body struct {
		Previous     string          `json:"previous_response_id"`
		Conversation json.RawMessage `json:"conversation"`
		Input        []struct {
			Type string `json:"type"`
		} `json:"input"`
	}
	if err := json.Unmarshal(req.body, &body); err != nil {
		t.Fatal(err)
	}
	s := sent{Previous: body.Previous, Types: []string{}}
	if len(body.Conversation) > 0 {
		_ = json.Unmarshal(body.Conversation, &s.Conversation)
	}
	for _, in := range body.Input {
		s.Types = append(s.Types, in.Type)
	}
	return s
}

func sents(t testing.TB, srv *server) []sent {
	var out []sent
	for _, r := range srv.Requests() {
		out = append(out, sentOf(t, r))
	}
	return out
}

func checkSent(t *testing.T, got, want []sent) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests sent\n got %+v\nwant %+v", got, want)
	}
}

func weatherAgent(m pipeline.Model) *pipeline.Agent {
	return &pipeline.Agent{Name: "assistant", Instructions: "Answer weather questions.", Model: m,
		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}, Tools: []pipeline.Tool{weather}}
}

func runWith(t *testing.T, stream bool, runner *pipeline.Runner, agent *pipeline.Agent, input string, opts ...pipeline.RunOption) *pipeline.Result {
	t.Helper()
	ctx := context.Background()
	if !stream {
		res, err := runner.Run(ctx, agent, pipeline.UserInput(input), opts...)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res
	}
	var res *pipeline.Result
	for ev, err := range runner.Stream(ctx, agent, pipeline.UserInput(input), opts...) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if rc, ok := ev.(pipeline.RunCompleted); ok {
			res = rc.Result
		}
	}
	return res
}

// TestChainResponses: with ChainResponses the second call names the first
// response and sends only the tool's output; the run records the same
// items as without it.
func TestChainResponses(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newServer(t, reply{file: "responses_tool_call.json"}, reply{file: "responses_final.json"})
			res := runWith(t, mode.stream, pipeline.NewRunner(), weatherAgent(openai.New(srv.client(0))), "weather?", openai.ChainResponses())
			checkSent(t, sents(t, srv), []sent{
				{Types: []string{"message"}},
				{Previous: "resp_tool_1", Types: []string{"function_call_output"}},
			})
			if got := describe(res.NewItems()); !slices.Equal(got, []string{"user_message", "reasoning", "tool_call(get_weather)", "tool_output(get_weather)", "assistant_message"}) {
				t.Errorf("items %v", got)
			}
		})
	}
}

// TestChainResponsesHandoff: a handoff keeps the chain; the next agent's
// first call sends only the handoff's output.
func TestChainResponsesHandoff(t *testing.T) {
	srv := newServer(t, reply{file: "responses_handoff.json"}, reply{file: "responses_text.json"})
	m := openai.New(srv.client(0))
	billing := &pipeline.Agent{Name: "billing", Model: m, Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
	agent := weatherAgent(m)
	agent.Handoffs = []pipeline.Handoff{{Agent: billing}}
	runWith(t, false, pipeline.NewRunner(), agent, "weather?", openai.ChainResponses())
	checkSent(t, sents(t, srv), []sent{
		{Types: []string{"message"}},
		{Previous: "resp_handoff_1", Types: []string{"function_call_output"}},
	})
}

// TestChainResponsesHandoffFilter: a handoff input filter that replaces
// the history starts the chain again with the whole new history.
func TestChainResponsesHandoffFilter(t *testing.T) {
	srv := newServer(t, reply{file: "responses_handoff.json"}, reply{file: "responses_text.json"})
	m := openai.New(srv.client(0))
	billing := &pipeline.Agent{Name: "billing", Model: m, Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
	agent := weatherAgent(m)
	agent.Handoffs = []pipeline.Handoff{{Agent: billing, InputFilter: func(_ context.Context, in pipeline.HandoffInput) ([]state.Item, error) {
		return []state.Item{state.UserMessage("summary: the user asked about the weather")}, nil
	}}}
	runWith(t, false, pipeline.NewRunner(), agent, "weather?", openai.ChainResponses())
	checkSent(t, sents(t, srv), []sent{
		{Types: []string{"message"}},
		{Types: []string{"message"}},
	})
}

// TestInConversation: with a conversation and a session, a second run
// sends only its own input: the session's history is in the conversation.
func TestInConversation(t *testing.T) {
	srv := newServer(t, reply{file: "responses_tool_call.json"}, reply{file: "responses_final.json"}, reply{file: "responses_text.json"})
	store := memory.New()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
	agent := weatherAgent(openai.New(srv.client(0)))
	runWith(t, false, runner, agent, "weather?", pipeline.WithSessionID("s"), openai.InConversation("conv_1"))
	runWith(t, true, runner, agent, "and tomorrow?", pipeline.WithSessionID("s"), openai.InConversation("conv_1"))
	checkSent(t, sents(t, srv), []sent{
		{Conversation: "conv_1", Types: []string{"message"}},
		{Conversation: "conv_1", Types: []string{"function_call_output"}},
		{Conversation: "conv_1", Types: []string{"message"}},
	})
	stored, err := store.List(context.Background(), "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 7 {
		t.Errorf("session holds %v, want every item of both runs", describe(stored))
	}
}

// TestChainResponsesResume: the chain survives a checkpoint: the resumed
// call names the paused response and sends only the approval's answer.
func TestChainResponsesResume(t *testing.T) {
	srv := newServer(t, mcpReplies(t)...)
	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(nil)))
	res := runWith(t, false, runner, mcpAgent(srv.srv.URL), "what is a turn?", openai.ChainResponses())
	data, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Approve("mcpr_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Resume(context.Background(), mcpAgent(srv.srv.URL), run); err != nil {
		t.Fatal(err)
	}
	checkSent(t, sents(t, srv), []sent{
		{Types: []string{"message"}},
		{Previous: "resp_m1", Types: []string{"mcp_approval_response"}},
	})
}

// BenchmarkConversationBytes measures the bytes each model call sends in a
// run of n tool-calling turns, with the whole history (full) and with the
// responses chained on the server (chained): O(history) against O(new
// items) per call.
func BenchmarkConversationBytes(b *testing.B) {
	for _, turns := range []int{10, 50} {
		for _, chained := range []bool{false, true} {
			name := fmt.Sprintf("turns=%d/full", turns)
			if chained {
				name = fmt.Sprintf("turns=%d/chained", turns)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var bytes, calls, last atomic.Int64
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					n := calls.Add(1)
					bytes.Add(int64(len(body)))
					last.Store(int64(len(body)))
					w.Header().Set("Content-Type", "application/json")
					id := fmt.Sprintf("resp_%d", n)
					if n%int64(turns) == 0 {
						fmt.Fprintf(w, `{"id":%q,"object":"response","status":"completed","model":"m","output":[{"id":"msg_%d","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}]}`, id, n)
						return
					}
					fmt.Fprintf(w, `{"id":%q,"object":"response","status":"completed","model":"m","output":[{"id":"fc_%d","type":"function_call","status":"completed","call_id":"call_%d","name":"get_weather","arguments":"{\"location\":\"Paris, France, where the weather is of interest\"}"}]}`, id, n, n)
				}))
				defer srv.Close()
				agent := weatherAgent(openai.New(clientAt(srv.URL)))
				runner := pipeline.NewRunner(pipeline.WithMaxTurns(turns + 1))
				var opts []pipeline.RunOption
				if chained {
					opts = append(opts, openai.ChainResponses())
				}
				b.ResetTimer()
				for b.Loop() {
					if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("What is the weather in Paris today?"), opts...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(bytes.Load())/float64(calls.Load()), "B/call")
				b.ReportMetric(float64(last.Load()), "B/last-call")
			})
		}
	}
}

// chainTransport answers every Responses API request in memory, as the
// server of a run of tool turns: a call of get_weather, and a message at
// every turns-th request.
type chainTransport struct {
	turns, n int
}

func (t *chainTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	t.n++
	body := fmt.Sprintf(`{"id":"resp_%d","object":"response","status":"completed","model":"m","output":[{"id":"fc_%d","type":"function_call","status":"completed","call_id":"call_%d","name":"get_weather","arguments":"{\"location\":\"Paris\"}"}]}`, t.n, t.n, t.n)
	if t.n%t.turns == 0 {
		body = fmt.Sprintf(`{"id":"resp_%d","object":"response","status":"completed","model":"m","output":[{"id":"msg_%d","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}]}`, t.n, t.n)
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}, nil
}

// TestChainedCallBuildsOnlyWhatItSends checks that a chained call's cost
// does not grow with the history the server holds: the adapter builds its
// input from the items the server has not seen, not from the whole input
// first (invariant 14). A run of 400 tool turns allocates, per turn, at
// most 1.5 times what a run of 40 does; built from the whole input, its
// per-turn bytes grew with the turn (over 4 times at 400 turns).
func TestChainedCallBuildsOnlyWhatItSends(t *testing.T) {
	perTurn := func(turns int) float64 {
		tr := &chainTransport{turns: turns}
		client := sdk.NewClient(option.WithBaseURL("http://openai.invalid/v1/"), option.WithAPIKey("sk-test"),
			option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
		runner := pipeline.NewRunner(pipeline.WithMaxTurns(turns + 1))
		agent := weatherAgent(openai.New(client))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("What is the weather in Paris today?"), openai.ChainResponses()); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / float64(turns)
	}
	short, long := perTurn(40), perTurn(400)
	t.Logf("a chained run allocates %.0f B per turn over 40 turns, %.0f B over 400", short, long)
	if long > 1.5*short {
		t.Errorf("a chained run allocates %.0f B per turn over 400 turns, %.0f B over 40: more than 1.5 times", long, short)
	}
}
