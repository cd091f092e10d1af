package persistence_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

func TestFaultsMemory(t *testing.T) {
	t.Parallel()
	testFaults(t, func(t *testing.T) session.Store { return memory.New() })
}

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
		mws:   []pipeline.Middleware{outputCheck(tripOnBad, nil)},
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
		mws:    []pipeline.Middleware{requireApproval("delete"), outputCheck(tripOnBad, nil)},
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
		mws:   []pipeline.Middleware{outputCheck(tripOnBad, nil)},
		want:  []string{"user:hi", "msg:one moment", "call:lookup", "out:lookup done"},
		final: "lookup done",
		tools: []string{"lookup"},
	},
}

// testFaults runs every fault scenario against stores made by newStore,
// failing each append of the scenario in turn in each mode: the run must
// fail with a typed error and leave a resumable state, and resuming (from
// a JSON checkpoint) must finish with nothing lost, nothing duplicated, no
// tool run twice and a session that is valid model input.
func testFaults(t *testing.T, newStore func(t *testing.T) session.Store) {
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
		decideAll(run, state.Approved)
		res, err = attempt(func(ctx context.Context) (*pipeline.Result, error) { return runner.Resume(ctx, agent, run) })
	}
	if cancel != nil && failures != 1 {
		t.Errorf("%d attempts failed, want 1", failures)
	}
	if res.FinalOutput() != sc.final {
		t.Errorf("final output %q, want %q", res.FinalOutput(), sc.final)
	}
	got := list(t, store)
	if d := cmp.Diff(sc.want, show(got)); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
	if err := validInput(got); err != nil {
		t.Errorf("session is not valid model input: %v", err)
	}
	for _, name := range sc.tools {
		if n := runs.get(name); n != 1 {
			t.Errorf("tool %s ran %d times, want 1", name, n)
		}
	}
}
