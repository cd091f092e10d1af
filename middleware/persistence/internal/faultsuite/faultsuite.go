// Package faultsuite is the persistence middleware's fault suite: each
// append of a conversation fails in turn, before or after the write or by
// hanging until cancelled, against any session.Store. persistence's tests
// run it on the in-memory store; middleware/persistence/internal/backends
// runs it on SQLite, PostgreSQL and Redis, in a test package no user
// module reaches, so that persistence's tests keep the database drivers
// out of a user's go.sum.
package faultsuite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/state"
)

// A faultScenario is a conversation run to completion through the
// persistence middleware, approving every call that waits.
type faultScenario struct {
	name   string
	agent  func(runs *counter) *pipeline.Agent
	mws    []pipeline.Middleware // inside persistence
	want   []string              // the session at the end
	final  string
	tools  []string // each must run exactly once
	resume int      // resumes a clean run needs
}

var faultScenarios = []faultScenario{
	{
		name: "tool then final message",
		agent: func(runs *counter) *pipeline.Agent {
			return &pipeline.Agent{
				Name: "a", Tools: []pipeline.Tool{echoTool("search", runs, nil)},
				Model: scripted.New(
					scripted.Respond(scripted.Think("plan"), scripted.Text("looking"), scripted.Call("search", `{}`)),
					scripted.Reply("found"),
				),
			}
		},
		mws:   []pipeline.Middleware{OutputCheck(TripOnBad, nil)},
		want:  []string{"user:hi", "reasoning:plan", "msg:looking", "call:search", "out:search done", "msg:found"},
		final: "found",
		tools: []string{"search"},
	},
	{
		name: "approval pause and resume",
		agent: func(runs *counter) *pipeline.Agent {
			return &pipeline.Agent{
				Name: "a", Tools: []pipeline.Tool{echoTool("list", runs, nil), echoTool("delete", runs, nil)},
				Model: scripted.New(
					scripted.Respond(scripted.Text("tidying"), scripted.Call("list", `{}`), scripted.Call("delete", `{}`)),
					scripted.Reply("tidied"),
				),
			}
		},
		mws:    []pipeline.Middleware{RequireApproval("delete"), OutputCheck(TripOnBad, nil)},
		want:   []string{"user:hi", "msg:tidying", "call:list", "call:delete", "out:list done", "out:delete done", "msg:tidied"},
		final:  "tidied",
		tools:  []string{"list", "delete"},
		resume: 1,
	},
	{
		name: "terminal tool",
		agent: func(runs *counter) *pipeline.Agent {
			return &pipeline.Agent{
				Name: "a", Tools: []pipeline.Tool{echoTool("lookup", runs, nil)}, ToolUse: pipeline.StopOnFirstTool(),
				Model: scripted.New(scripted.Respond(scripted.Text("one moment"), scripted.Call("lookup", `{}`))),
			}
		},
		mws:   []pipeline.Middleware{OutputCheck(TripOnBad, nil)},
		want:  []string{"user:hi", "msg:one moment", "call:lookup", "out:lookup done"},
		final: "lookup done",
		tools: []string{"lookup"},
	},
}

// Run runs every fault scenario against stores made by newStore,
// failing each append of the scenario in turn in each mode: the run must
// fail with a typed error and leave a resumable state, and resuming (from
// a JSON checkpoint) must finish with nothing lost, nothing duplicated, no
// tool run twice and a session that is valid model input.
func Run(t *testing.T, newStore func(t *testing.T) session.Store) {
	for _, sc := range faultScenarios {
		t.Run(sc.name, func(t *testing.T) {
			// A clean run counts the scenario's appends.
			clean := faulty.New(newStore(t))
			t.Cleanup(func() { _ = clean.Close() })
			runFaultScenario(t, sc, clean, nil, sc.resume)
			total := clean.Appends()
			if total == 0 {
				t.Fatal("the clean run appended nothing")
			}
			for n := 1; n <= total; n++ {
				for _, mode := range []faulty.Mode{faulty.BeforeWrite, faulty.AfterWrite, faulty.Slow} {
					t.Run(fmt.Sprintf("%s on append %d", mode, n), func(t *testing.T) {
						var cancel cancelBox
						fault := faulty.Fault{Nth: n, Mode: mode, Delay: time.Hour, OnFire: cancel.cancel}
						store := faulty.New(newStore(t), fault)
						t.Cleanup(func() { _ = store.Close() })
						runFaultScenario(t, sc, store, &cancel, sc.resume+1)
						if store.Fired() != 1 {
							t.Errorf("the fault fired %d times, want 1", store.Fired())
						}
					})
				}
			}
		})
	}
}

// cancelBox holds the cancel func of the current attempt's context.
type cancelBox struct {
	mu sync.Mutex
	f  context.CancelFunc
}

func (b *cancelBox) set(f context.CancelFunc) {
	b.mu.Lock()
	b.f = f
	b.mu.Unlock()
}

func (b *cancelBox) cancel() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.f != nil {
		b.f()
	}
}

// runFaultScenario runs sc on store, resuming after each failure or pause
// (at most maxResumes times), and checks the outcome.
func runFaultScenario(t *testing.T, sc faultScenario, store session.Store, cancel *cancelBox, maxResumes int) {
	t.Helper()
	var runs counter
	agent := sc.agent(&runs)
	mws := append([]pipeline.Middleware{persistence.Middleware(store)}, sc.mws...)
	runner := pipeline.NewRunner(pipeline.WithToolConcurrency(1), pipeline.WithMiddleware(mws...))
	attempt := func(f func(ctx context.Context) (*pipeline.Result, error)) (*pipeline.Result, error) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		if cancel != nil {
			cancel.set(stop)
		}
		return f(ctx)
	}
	res, err := attempt(func(ctx context.Context) (*pipeline.Result, error) {
		return runner.Run(ctx, agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid))
	})
	failures := 0
	for resumes := 0; err != nil || res.Interrupted(); resumes++ {
		if err != nil {
			failures++
			if _, ok := errors.AsType[*persistence.AppendError](err); !ok {
				t.Fatalf("attempt %d: error %v is not a *persistence.AppendError", resumes+1, err)
			}
			if !errors.Is(err, faulty.ErrInjected) && !errors.Is(err, context.Canceled) {
				t.Fatalf("attempt %d: error %v does not wrap the fault", resumes+1, err)
			}
		}
		if resumes == maxResumes {
			t.Fatalf("not finished after %d resumes (last error %v)", resumes, err)
		}
		st := res.State()
		if err != nil {
			// The error alone is enough to resume: it carries the state.
			var ok bool
			if st, ok = pipeline.StateOf(err); !ok {
				t.Fatalf("attempt %d: error %v carries no resumable state", resumes+1, err)
			}
		}
		run := pipelinetest.RoundTrip(t, st)
		for _, p := range run.Pending() {
			if err := run.Approve(p.CallID); err != nil {
				t.Fatalf("approve %s: %v", p.CallID, err)
			}
		}
		res, err = attempt(func(ctx context.Context) (*pipeline.Result, error) { return runner.Resume(ctx, agent, run) })
	}
	if cancel != nil && failures != 1 {
		t.Errorf("%d attempts failed, want 1", failures)
	}
	if res.FinalOutput() != sc.final {
		t.Errorf("final output %q, want %q", res.FinalOutput(), sc.final)
	}
	got := List(t, store)
	if d := cmp.Diff(sc.want, Show(got)); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
	if err := ValidInput(got); err != nil {
		t.Errorf("session is not valid model input: %v", err)
	}
	for _, name := range sc.tools {
		if n := runs.get(name); n != 1 {
			t.Errorf("tool %s ran %d times, want 1", name, n)
		}
	}
}

const sid = "chat"

// counter counts tool runs by name; tools with external effects would
// pass the idempotency key on, the tests count.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[name]++
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// echoTool returns a tool that answers "<name> done", counting its runs,
// and calls during (if set) while it runs.
func echoTool(name string, runs *counter, during func(ctx context.Context, c *pipeline.ToolCall)) pipeline.Tool {
	return toolFunc{name: name, fn: func(ctx context.Context, c *pipeline.ToolCall) (string, error) {
		runs.add(name)
		if during != nil {
			during(ctx, c)
		}
		return name + " done", nil
	}}
}

type toolFunc struct {
	name string
	fn   func(ctx context.Context, c *pipeline.ToolCall) (string, error)
}

func (f toolFunc) Spec() pipeline.ToolSpec { return pipeline.ToolSpec{Name: f.name} }
func (f toolFunc) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	return f.fn(ctx, c)
}

// RequireApproval is a test-local approval middleware: calls to the named
// tool wait for a decision recorded in the run's state.
func RequireApproval(tool string) pipeline.Middleware {
	return pipeline.Middleware{Name: "approval", Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			if c.Name != tool {
				return next.CallTool(ctx, c)
			}
			d, _, ok := c.Turn.Run.DecisionFor(c.Name, c.CallID)
			switch {
			case !ok:
				return &pipeline.ToolResult{Status: pipeline.ToolPending}, nil
			case d.Verdict == state.Rejected:
				return &pipeline.ToolResult{Status: pipeline.ToolRejected, Output: "Tool execution was not approved."}, nil
			}
			return next.CallTool(ctx, c)
		})
	}}
}

// Bad is what the test checks' verdicts look for.
const Bad = "secret"

// TripOnBad trips when the output contains Bad.
func TripOnBad(out string) error {
	if strings.Contains(out, Bad) {
		return fmt.Errorf("check: output contains %q: %w", Bad, pipeline.ErrOutputRejected)
	}
	return nil
}

// OutputCheck is a test-local output guardrail: a turn stage that checks
// a final output after the turn, records its result in the state first,
// and returns verdict's error. before, if set, runs just before the
// verdict (to look at the store then, or to cancel the run).
func OutputCheck(verdict func(out string) error, before func(ctx context.Context, t *pipeline.Turn)) pipeline.Middleware {
	return pipeline.Middleware{Name: "check", Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			if err := next.ServeTurn(ctx, t); err != nil || t.Next.Kind != pipeline.NextFinalOutput {
				return err
			}
			if before != nil {
				before(ctx, t)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			err := verdict(t.Next.Output)
			t.Run.AddGuardrailResult(state.GuardrailResult{Name: "check", Stage: state.StageOutput, Turn: t.Number, Tripped: errors.Is(err, pipeline.ErrOutputRejected)})
			return err
		})
	}}
}

// Show renders items as "kind:text", the form the tests assert on.
func Show(items []state.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		k := it.Kind().String()
		switch it.Kind() {
		case state.KindUserMessage:
			k = "user"
		case state.KindAssistantMessage:
			k = "msg"
		case state.KindToolCall:
			out[i] = "call:" + it.Name()
			continue
		case state.KindToolOutput:
			k = "out"
		case state.KindHandoffCall:
			out[i] = "handoff:" + it.Name()
			continue
		}
		out[i] = k + ":" + it.Text()
	}
	return out
}

// List returns every item of the suite's session in s, failing t on an error.
func List(t testing.TB, s session.Store) []state.Item {
	t.Helper()
	items, err := s.List(context.Background(), sid, 0)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return items
}

// ValidInput reports why items are not valid Responses-API input: a call
// without its output, an output without its call or before it.
func ValidInput(items []state.Item) error {
	calls := map[string]bool{}
	outs := map[string]bool{}
	for _, it := range items {
		switch {
		case it.Kind().IsCall():
			if calls[it.CallID()] {
				return fmt.Errorf("call %s stored twice", it.CallID())
			}
			calls[it.CallID()] = true
		case it.Kind().IsOutput():
			if !calls[it.CallID()] {
				return fmt.Errorf("output of %s without a call before it", it.CallID())
			}
			if outs[it.CallID()] {
				return fmt.Errorf("output of %s stored twice", it.CallID())
			}
			outs[it.CallID()] = true
		}
	}
	for id := range calls {
		if !outs[id] {
			return fmt.Errorf("call %s has no output", id)
		}
	}
	return nil
}
