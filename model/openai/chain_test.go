package openai_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
)

// textResponseID is the ID of testdata/responses_text.json.
const textResponseID = "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"

func textAgent(m pipeline.Model) *pipeline.Agent {
	return &pipeline.Agent{Name: "assistant", Model: m, Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
}

// TestChainAcrossRuns: with persistence's WithContinuation, the second run
// of a session continues the first run's last response and sends only its
// own input; Result.LastResponseID is that response.
func TestChainAcrossRuns(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newServer(t, reply{file: "responses_text.json"}, reply{file: "responses_text.json"})
			runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(memory.New(), persistence.WithContinuation())))
			agent := textAgent(openai.New(srv.client(0)))
			res := runWith(t, mode.stream, runner, agent, "hello", openai.ChainResponses(), pipeline.WithSessionID("s"))
			if got := res.LastResponseID(); got != textResponseID {
				t.Fatalf("LastResponseID() = %q, want %q", got, textResponseID)
			}
			runWith(t, mode.stream, runner, agent, "again", openai.ChainResponses(), pipeline.WithSessionID("s"))
			checkSent(t, sents(t, srv), []sent{
				{Types: []string{"message"}},
				{Previous: textResponseID, Types: []string{"message"}},
			})
		})
	}
}

// TestChainFallsBackOnce: a continued response the server no longer has
// (400 previous_response_not_found) makes the call send the whole input
// once, without previous_response_id, and say so in an event and on the
// response.
func TestChainFallsBackOnce(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newServer(t,
				reply{file: "responses_text.json"},
				reply{status: 400, file: "error_previous_not_found.json"},
				reply{file: "responses_text.json"})
			var lost string
			probe := pipeline.Middleware{Name: "probe", Model: func(next pipeline.Model) pipeline.Model {
				return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
					out, err := next.Respond(ctx, c)
					if err == nil {
						lost = out.ContinuationLost
					}
					return out, err
				})
			}}
			runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(memory.New(), persistence.WithContinuation()), probe))
			agent := textAgent(openai.New(srv.client(0)))
			runWith(t, mode.stream, runner, agent, "hello", openai.ChainResponses(), pipeline.WithSessionID("s"))
			var events []pipeline.ContinuationLost
			if mode.stream {
				for ev, err := range runner.Stream(context.Background(), agent, pipeline.UserInput("again"), openai.ChainResponses(), pipeline.WithSessionID("s")) {
					if err != nil {
						t.Fatal(err)
					}
					if cl, ok := ev.(pipeline.ContinuationLost); ok {
						events = append(events, cl)
					}
				}
			} else {
				runWith(t, false, runner, agent, "again", openai.ChainResponses(), pipeline.WithSessionID("s"))
			}
			checkSent(t, sents(t, srv), []sent{
				{Types: []string{"message"}},
				{Previous: textResponseID, Types: []string{"message"}},
				{Types: []string{"message", "message", "message"}},
			})
			if lost != textResponseID {
				t.Errorf("ModelResponse.ContinuationLost = %q, want %q", lost, textResponseID)
			}
			if mode.stream && (len(events) != 1 || events[0].ResponseID != textResponseID) {
				t.Errorf("ContinuationLost events %+v, want one for %q", events, textResponseID)
			}
		})
	}
}

// TestChainFrom: a response named by hand (ChainFrom) holds the session's
// history, so the call sends only the run's input, and the run's next
// call chains on its own response.
func TestChainFrom(t *testing.T) {
	srv := newServer(t, reply{file: "responses_text.json"}, reply{file: "responses_tool_call.json"}, reply{file: "responses_final.json"})
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(memory.New())))
	runWith(t, false, runner, textAgent(openai.New(srv.client(0))), "hello", pipeline.WithSessionID("s"))
	agent := weatherAgent(openai.New(srv.client(0)))
	runWith(t, false, runner, agent, "weather?", pipeline.WithSessionID("s"), openai.ChainFrom("resp_by_hand"))
	checkSent(t, sents(t, srv), []sent{
		{Types: []string{"message"}},
		{Previous: "resp_by_hand", Types: []string{"message"}},
		{Previous: "resp_tool_1", Types: []string{"function_call_output"}},
	})
}

// TestChainFromYieldsToTheSession: a response the session remembers
// (WithContinuation) is more recent than one named by hand, and the first
// call continues it instead.
func TestChainFromYieldsToTheSession(t *testing.T) {
	srv := newServer(t, reply{file: "responses_text.json"}, reply{file: "responses_text.json"})
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(memory.New(), persistence.WithContinuation())))
	agent := textAgent(openai.New(srv.client(0)))
	runWith(t, false, runner, agent, "hello", openai.ChainResponses(), pipeline.WithSessionID("s"))
	runWith(t, false, runner, agent, "again", openai.ChainFrom("resp_by_hand"), pipeline.WithSessionID("s"))
	checkSent(t, sents(t, srv), []sent{
		{Types: []string{"message"}},
		{Previous: textResponseID, Types: []string{"message"}},
	})
}
