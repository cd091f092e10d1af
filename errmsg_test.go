package turnkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/middleware/retry"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/filestore"
	"github.com/turnkit/turnkit/state/memstore"
	"github.com/turnkit/turnkit/tool"
)

// packages are the prefixes the library's errors start with.
var packages = map[string]bool{
	"state": true, "pipeline": true, "approval": true, "persistence": true, "checkpoint": true,
	"guardrails": true, "session": true, "memory": true, "sqlite": true, "postgres": true,
	"redis": true, "faulty": true, "memstore": true, "filestore": true, "scripted": true,
	"tool": true, "mcp": true, "tracing": true, "riverrun": true, "openai": true, "retry": true,
}

// repeatedPrefix returns a package prefix msg names twice, or "".
func repeatedPrefix(msg string) string {
	seen := map[string]bool{}
	parts := strings.Split(msg, ": ")
	for _, p := range parts[:len(parts)-1] { // a prefix is followed by ": "
		if !packages[p] {
			continue
		}
		if seen[p] {
			return p
		}
		seen[p] = true
	}
	return ""
}

// walk calls f on err and every error it wraps.
func walk(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, f)
		}
	}
}

// TestErrorMessagesNameEachPackageOnce is issue 34 point 5: the errors the
// library's packages return on their error paths, and every error they
// wrap, name each package once: "state: save run "x": version conflict",
// not "state: save run "x": state: version conflict".
func TestErrorMessagesNameEachPackageOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	errs := map[string]error{}
	add := func(name string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error: the error path was not taken", name)
			return
		}
		errs[name] = err
	}

	// state: decisions, checkpoints, stores.
	paused := pausedRun(t)
	add("state: decide an unknown call", paused.Approve("call_nope"))
	callID := paused.Pending()[0].CallID
	if err := paused.Approve(callID); err != nil {
		t.Fatal(err)
	}
	add("state: decide a decided call", paused.Reject(callID, "no"))
	_, err := state.Unmarshal([]byte(`{"version":1`))
	add("state: truncated checkpoint", err)
	_, err = state.Unmarshal([]byte(`{"version":999}`))
	add("state: future checkpoint", err)
	_, err = state.Unmarshal([]byte(`[]`))
	add("state: malformed checkpoint", err)
	add("state: history after the response", runcore.SetHistory(paused, []state.Item{state.UserMessage("x")}))
	for name, store := range map[string]state.Store{"memstore": memstore.New(), "filestore": newFilestore(t)} {
		_, err = store.Load(ctx, "run_missing")
		add("state: "+name+" load a missing run", err)
		a, b := state.NewRun("run_cas", "a"), state.NewRun("run_cas", "a")
		if err := store.Save(ctx, a); err != nil {
			t.Fatal(err)
		}
		add("state: "+name+" lost compare-and-swap", store.Save(ctx, b))
	}

	// pipeline: resume refusals, tool failures, nested runs.
	done := finishedRun(t)
	_, err = pipeline.NewRunner().Resume(ctx, &pipeline.Agent{Name: "a", Model: scripted.New()}, done)
	add("pipeline: resume a finished run", err)
	_, err = pipeline.NewRunner().Resume(ctx, &pipeline.Agent{Name: "a", Model: scripted.New()}, state.NewRun("run_new", "a"))
	add("pipeline: resume a run that never started", err)
	_, err = pipeline.NewRunner().Run(ctx, nil, pipeline.UserInput("hi"))
	add("pipeline: nil agent", err)
	_, err = pipeline.NewRunner(pipeline.WithMaxTurns(1)).Run(ctx, &pipeline.Agent{
		Name: "a", Model: scripted.New(scripted.CallTool("nope", `{}`), scripted.Reply("x")),
	}, pipeline.UserInput("hi"))
	add("pipeline: max turns", err)
	loops := &pipeline.Agent{Name: "inner", Model: scripted.New(scripted.CallTool("inner_loop", `{}`), scripted.Reply("x"))}
	loops.Tools = []pipeline.Tool{pipeline.AgentTool(&pipeline.Agent{Name: "inner_loop", Model: scripted.New(scripted.Reply("y"))})}
	_, err = pipeline.NewRunner(pipeline.WithMaxTurns(1), pipeline.WithToolErrorsAbort()).Run(ctx, &pipeline.Agent{
		Name: "outer", Model: scripted.New(scripted.CallTool("inner", `{"input":"go"}`)),
		Tools: []pipeline.Tool{pipeline.AgentTool(loops)},
	}, pipeline.UserInput("hi"))
	add("pipeline: a nested run past its turn limit aborts the outer run", err)
	type order struct {
		ID string `json:"id"`
	}
	target := &pipeline.Agent{Name: "b", Model: scripted.New(scripted.Reply("x"))}
	_, err = pipeline.NewRunner().Run(ctx, &pipeline.Agent{Name: "a", Model: scripted.New(scripted.CallTool("transfer_to_b", `{"id":7}`)),
		Handoffs: []pipeline.Handoff{tool.Handoff[order](target, nil)}}, pipeline.UserInput("hi"))
	add("pipeline: handoff arguments of the wrong type", err)
	_, err = pipeline.NewRunner().Run(ctx, &pipeline.Agent{Name: "a", Model: scripted.New(scripted.CallTool("transfer_to_b", `{"id":"7"}`)),
		Handoffs: []pipeline.Handoff{tool.Handoff(target, func(context.Context, order) error {
			return pipeline.ErrNoHandoff // any error of the library's
		})}}, pipeline.UserInput("hi"))
	add("pipeline: a handoff callback fails", err)
	slow := pipeline.NewTool(pipeline.ToolSpec{Name: "slow"}, func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	_, err = pipeline.NewRunner(pipeline.WithToolTimeout(time.Millisecond), pipeline.WithToolTimeoutsAbort()).Run(ctx, &pipeline.Agent{
		Name: "a", Model: scripted.New(scripted.CallTool("slow", `{}`)), Tools: []pipeline.Tool{slow},
	}, pipeline.UserInput("hi"))
	add("pipeline: a tool timeout aborts the run", err)
	spender := func() *pipeline.Agent {
		return &pipeline.Agent{Name: "a", Model: scripted.New(scripted.CallTool("slow", `{}`).WithUsage(state.Usage{OutputTokens: 9})), Tools: []pipeline.Tool{slow}}
	}
	_, err = pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{OutputTokens: 5})).Run(ctx, spender(), pipeline.UserInput("hi"))
	add("pipeline: budget exceeded", err)
	_, err = pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{Cost: 5})).Run(ctx, spender(), pipeline.UserInput("hi"))
	add("pipeline: no price", err)

	// retry: the attempts failed.
	_, err = pipeline.NewRunner(pipeline.WithMiddleware(retry.Middleware(
		retry.WithSleep(func(context.Context, time.Duration) error { return nil }),
	))).Run(ctx, &pipeline.Agent{Name: "a", Model: scripted.New(
		scripted.Fail(&pipeline.ModelError{Status: 503, Retryable: true, Err: errors.New("openai: overloaded")}),
		scripted.Fail(&pipeline.ModelError{Status: 503, Retryable: true, Err: errors.New("openai: overloaded")}),
		scripted.Fail(&pipeline.ModelError{Status: 503, Retryable: true, Err: errors.New("openai: overloaded")}),
	)}, pipeline.UserInput("hi"))
	add("retry: attempts failed", err)

	// guardrails: a tripwire, in a run and in a nested run.
	trip := guardrails.Output(func(context.Context, *pipeline.Agent, string) (guardrails.Verdict, error) {
		return guardrails.Trip("no"), nil
	})
	_, err = pipeline.NewRunner(pipeline.WithMiddleware(trip)).Run(ctx, &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("x"))}, pipeline.UserInput("hi"))
	add("guardrails: tripwire", err)
	_, err = pipeline.NewRunner(pipeline.WithMiddleware(trip), pipeline.WithToolErrorsAbort()).Run(ctx, &pipeline.Agent{
		Name: "outer", Model: scripted.New(scripted.CallTool("inner", `{"input":"go"}`)),
		Tools: []pipeline.Tool{pipeline.AgentTool(&pipeline.Agent{Name: "inner", Model: scripted.New(scripted.Reply("x"))})},
	}, pipeline.UserInput("hi"))
	add("guardrails: nested tripwire", err)

	// approval: a claim lost to another worker.
	store := memstore.New()
	first := pausedRun(t)
	if err := store.Save(ctx, first); err != nil {
		t.Fatal(err)
	}
	w1, _ := store.Load(ctx, first.ID())
	w2, _ := store.Load(ctx, first.ID())
	if err := store.Save(ctx, w1); err != nil {
		t.Fatal(err)
	}
	_, err = approval.Resume(ctx, store, pipeline.NewRunner(), &pipeline.Agent{Name: "a", Model: scripted.New()}, w2)
	add("approval: claim lost", err)

	// persistence: a failed append.
	bad := faulty.New(memory.New(), faulty.FailBefore(1))
	_, err = pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(bad))).Run(ctx,
		&pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("x"))}, pipeline.UserInput("hi"), pipeline.WithSessionID("s"))
	add("persistence: append fails", err)

	// checkpoint: a second run under the same ID loses its claim.
	cp := checkpoint.New(memstore.New())
	cr := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
	if _, err := cr.Run(ctx, &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("x"))}, pipeline.UserInput("hi"), pipeline.WithRunID("run_same")); err != nil {
		t.Fatal(err)
	}
	_, err = cr.Run(ctx, &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("x"))}, pipeline.UserInput("hi"), pipeline.WithRunID("run_same"))
	add("checkpoint: claim lost", err)
	_, err = cp.Resume(ctx, cr, &pipeline.Agent{Name: "a", Model: scripted.New()}, "run_missing")
	add("checkpoint: resume a missing run", err)

	// session stores: a different item at a stored position, a closed store.
	sq, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]session.Store{"memory": memory.New(), "sqlite": sq} {
		one := state.UserMessage("a").WithSeq(1)
		if err := s.Append(ctx, "s", "r", []state.Item{one}); err != nil {
			t.Fatal(err)
		}
		add("session: "+name+" conflict", s.Append(ctx, "s", "r", []state.Item{state.UserMessage("b").WithSeq(1)}))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = s.List(ctx, "s", 0)
		add("session: "+name+" closed", err)
	}

	for name, err := range errs {
		walk(err, func(e error) {
			if p := repeatedPrefix(e.Error()); p != "" {
				t.Errorf("%s: %q names %q twice", name, e.Error(), p+":")
			}
		})
	}
}

// pausedRun returns a run paused on one call that needs approval.
func pausedRun(t *testing.T) *state.Run {
	t.Helper()
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.CallTool("danger", `{}`), scripted.Reply("done")),
		Tools: []pipeline.Tool{pipeline.NewTool(pipeline.ToolSpec{Name: "danger"}, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })}}
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.Always()))).Run(context.Background(), agent, pipeline.UserInput("hi"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("run = %v, %v; want a pause", res, err)
	}
	return res.State()
}

// finishedRun returns a run that finished.
func finishedRun(t *testing.T) *state.Run {
	t.Helper()
	res, err := pipeline.NewRunner().Run(context.Background(), &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("x"))}, pipeline.UserInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	return res.State()
}

func newFilestore(t *testing.T) state.Store {
	t.Helper()
	s, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRepeatedPrefix checks the check.
func TestRepeatedPrefix(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]string{
		`support: state: run r: decide call "c": state: call already decided`: "state",
		`state: save run "r": version conflict`:                               "",
		`pipeline: tool "t" call c: guardrails: output guardrail "g" tripped`: "",
		`approval: claim run r: state: save run "r": state: version conflict`: "state",
	} {
		if got := repeatedPrefix(msg); got != want {
			t.Errorf("repeatedPrefix(%q) = %q, want %q", msg, got, want)
		}
	}
}

// serverStore is a session and checkpoint store on one server.
type serverStore interface {
	session.Store
	state.Store
}

// TestServerStoreErrorMessagesNameEachPackageOnce walks the errors of the
// PostgreSQL and Redis stores like TestErrorMessagesNameEachPackageOnce
// (skipped without the servers, as the backends' own tests are).
func TestServerStoreErrorMessagesNameEachPackageOnce(t *testing.T) {
	t.Parallel()
	open := map[string]func(t *testing.T) serverStore{
		"postgres": func(t *testing.T) serverStore {
			s, err := postgres.Open(t.Context(), testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"), postgres.WithSchema("errmsg_test"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis": func(t *testing.T) serverStore {
			s, err := redis.Open(t.Context(), testenv.ServerURL(t, "TURNKIT_REDIS_URL"), redis.WithPrefix("errmsg_test:"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range open {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			id := strconv.FormatInt(time.Now().UnixNano(), 36)
			sid, rid := "s_"+id, "run_"+id
			t.Cleanup(func() {
				_ = s.Clear(ctx, sid)
				_ = s.Delete(ctx, rid)
			})
			errs := map[string]error{}
			if err := s.Append(ctx, sid, rid, []state.Item{state.UserMessage("a").WithSeq(1)}); err != nil {
				t.Fatal(err)
			}
			errs["conflict"] = s.Append(ctx, sid, rid, []state.Item{state.UserMessage("b").WithSeq(1)})
			_, errs["load a missing run"] = s.Load(ctx, "run_missing_"+id)
			if err := s.Save(ctx, state.NewRun(rid, "a")); err != nil {
				t.Fatal(err)
			}
			errs["lost compare-and-swap"] = s.Save(ctx, state.NewRun(rid, "a"))
			for what, err := range errs {
				if err == nil {
					t.Errorf("%s: no error: the error path was not taken", what)
				}
				walk(err, func(e error) {
					if p := repeatedPrefix(e.Error()); p != "" {
						t.Errorf("%s: %q names %q twice", what, e.Error(), p+":")
					}
				})
			}
		})
	}
}
