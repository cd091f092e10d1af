package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// oneStore keeps sessions and checkpoints as one store and offers
// SaveAppend, as session/sqlite, postgres and redis do, so the tests here
// can see which path the checkpointer takes. It is not atomic: its
// SaveAppend saves, then appends, and an append that fails leaves the
// save in place. The tests here only make SaveAppend fail as a whole
// before it writes anything (fail, when set, fails the next one) and
// never rely on an undo. Atomicity on the real stores is tested
// elsewhere: session/internal/ckpttest's SaveAppend cases (an append
// conflict writes nothing, a version conflict appends nothing), run by
// TestCheckpointRows in session/sqlite and session/postgres, Redis's
// TestSaveAppend in session/redis, and the SIGKILL runs of
// internal/torture (TestTortureSQLite, TestTorturePostgres,
// TestTortureRedis).
type oneStore struct {
	*memory.Store
	states *memstore.Store

	mu          sync.Mutex
	saveAppends int
	appends     int
	fail        error
}

func newOneStore() *oneStore { return &oneStore{Store: memory.New(), states: memstore.New()} }

func (s *oneStore) Load(ctx context.Context, id string) (*state.Run, error) {
	return s.states.Load(ctx, id)
}
func (s *oneStore) Save(ctx context.Context, run *state.Run) error { return s.states.Save(ctx, run) }
func (s *oneStore) Delete(ctx context.Context, id string) error    { return s.states.Delete(ctx, id) }

func (s *oneStore) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	s.mu.Lock()
	s.appends++
	s.mu.Unlock()
	return s.Store.Append(ctx, sessionID, runID, items)
}

func (s *oneStore) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	s.mu.Lock()
	s.saveAppends++
	err := s.fail
	s.fail = nil
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.states.Save(ctx, run); err != nil {
		return err
	}
	return s.Store.Append(ctx, sessionID, run.ID(), items)
}

func atomicRunner(s *oneStore) (*pipeline.Runner, *checkpoint.Checkpointer) {
	cp := checkpoint.New(s, checkpoint.WithSession(s))
	return pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware())), cp
}

func atomicAgent() *pipeline.Agent {
	echo := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo}, Model: scripted.New(
		scripted.Respond(scripted.Call("echo", `{}`)),
		scripted.Respond(scripted.Call("echo", `{}`)),
		scripted.Reply("done"),
	)}
}

// TestSaveAppendWhenOneStore: when the checkpointer's state store is the
// session store and it offers SaveAppend, every append goes with its save
// in one call, and none goes alone.
func TestSaveAppendWhenOneStore(t *testing.T) {
	ctx := context.Background()
	s := newOneStore()
	runner, _ := atomicRunner(s)
	res, err := runner.Run(ctx, atomicAgent(), pipeline.UserInput("go"), pipeline.WithSessionID("s1"), pipeline.WithRunID("r1"))
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if s.saveAppends != 4 || s.appends != 0 { // input, two tool turns, final message
		t.Errorf("SaveAppend called %d times and Append %d times; want 4 and 0", s.saveAppends, s.appends)
	}
	stored, err := s.Load(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if out, done := stored.FinalOutput(); !done || out != "done" {
		t.Errorf("checkpoint final output %q, %v; want done", out, done)
	}
	if _, ok := stored.Extension("turnkit.checkpoint"); ok {
		t.Error("a committed final commit's record is still in the checkpoint")
	}
	items, err := s.List(ctx, "s1", 0)
	if err != nil || len(items) != stored.Len() {
		t.Fatalf("session holds %d items (%v), the checkpoint %d", len(items), err, stored.Len())
	}
}

// TestSaveAppendFailedFinalCommit: a final commit whose one transaction
// fails leaves the run finished in its checkpoint with the commit
// recorded (the run's end save), and Resume completes it without asking
// the model again.
func TestSaveAppendFailedFinalCommit(t *testing.T) {
	ctx := context.Background()
	s := newOneStore()
	_, cp := atomicRunner(s) // its checkpointer; the runner below adds the failing stage
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("done"))}
	boom := errors.New("disk full")
	calls := 0
	fail := pipeline.Middleware{Name: "fail-final", Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			calls++
			err := next.ServeTurn(ctx, t)
			s.mu.Lock()
			s.fail = boom // the final commit, made when persistence's turn stage returns
			s.mu.Unlock()
			return err
		})
	}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware(), fail))
	_, err := runner.Run(ctx, agent, pipeline.UserInput("go"), pipeline.WithSessionID("s1"), pipeline.WithRunID("r1"))
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the failed commit's error", err)
	}
	if items, _ := s.List(ctx, "s1", 0); len(items) != 1 {
		t.Fatalf("session holds %d items after the failed final commit, want the input only", len(items))
	}
	_, err = cp.Resume(ctx, runner, agent, "r1")
	var fin *checkpoint.FinishedError
	if !errors.As(err, &fin) || !fin.Completed || fin.FinalOutput != "done" {
		t.Fatalf("Resume = %v, want a FinishedError that completed the commit", err)
	}
	if calls != 1 {
		t.Errorf("the model was asked %d times, want 1", calls)
	}
	items, _ := s.List(ctx, "s1", 0)
	if len(items) != 2 || items[1].Text() != "done" {
		t.Errorf("session after Resume: %v, want the input and the final message", items)
	}
}

// TestSaveAppendConflictLosesRun: a SaveAppend that finds a newer version
// loses the run, as a save does.
func TestSaveAppendConflictLosesRun(t *testing.T) {
	ctx := context.Background()
	s := newOneStore()
	runner, _ := atomicRunner(s)
	s.fail = &state.StoreError{Op: "save", RunID: "r1", Have: 1, Stored: 2, Err: state.ErrConflict}
	_, err := runner.Run(ctx, atomicAgent(), pipeline.UserInput("go"), pipeline.WithSessionID("s1"), pipeline.WithRunID("r1"))
	var se *checkpoint.SaveError
	if !errors.As(err, &se) || !errors.Is(err, state.ErrConflict) || se.Stage != checkpoint.StageClaim {
		t.Fatalf("Run = %v, want a SaveError at the claim (the run's first save) wrapping ErrConflict", err)
	}
	if items, _ := s.List(ctx, "s1", 0); len(items) != 0 {
		t.Errorf("session holds %d items after the lost run", len(items))
	}
}

// TestAtomicReportsTheWiring checks that Atomic says when saves and
// appends share a transaction: only when WithSession gets the state store
// itself and it offers SaveAppend. A wrapped store given to one side only
// is the wiring mistake Atomic lets a test catch.
func TestAtomicReportsTheWiring(t *testing.T) {
	one := newOneStore()
	wrapped := struct{ *oneStore }{one} // hides nothing, but is another value
	tests := []struct {
		name string
		cp   *checkpoint.Checkpointer
		want bool
	}{
		{"one store for both", checkpoint.New(one, checkpoint.WithSession(one)), true},
		{"no session store", checkpoint.New(one), false},
		{"a wrapped session store", checkpoint.New(one, checkpoint.WithSession(wrapped)), false},
		{"stores without SaveAppend", checkpoint.New(memstore.New(), checkpoint.WithSession(memory.New())), false},
	}
	for _, tt := range tests {
		if got := tt.cp.Atomic(); got != tt.want {
			t.Errorf("%s: Atomic() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
