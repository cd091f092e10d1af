package branch_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/branch"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func deleteTool(deleted *int) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: "delete_files", Description: "Deletes files."},
		func(context.Context, json.RawMessage) (string, error) { *deleted++; return "deleted 3 files", nil })
}

// TestForkPausedRun pauses a run on an approval, forks it into a new
// session, and resumes the two otherwise: the original approved with its
// model, the fork rejected with another model. Neither sees the other's
// items, and forking changed nothing of the original.
func TestForkPausedRun(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		testForkPausedRun(t, store)
	})
	t.Run("sealed", func(t *testing.T) {
		kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("kek"))
		db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"), sqlite.WithCodec(kr.Codec()))
		if err != nil {
			t.Fatal(err)
		}
		store := encrypt.Wrap(db, kr)
		defer store.Close()
		testForkPausedRun(t, store)
	})
}

func testForkPausedRun(t *testing.T, store encrypt.Backend) {
	ctx := t.Context()
	var deleted int
	cp := checkpoint.New(store, checkpoint.WithSession(store))
	runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware(), approval.Require(approval.ByTool("delete_files"))))
	agent := func(steps ...scripted.Step) *pipeline.Agent {
		return &pipeline.Agent{Name: "janitor", Model: scripted.New(steps...), Tools: []pipeline.Tool{deleteTool(&deleted)}}
	}
	// An earlier message of the conversation, then the run that pauses.
	if _, err := runner.Run(ctx, agent(scripted.Reply("Hello.")), pipeline.UserInput("Hi."), pipeline.WithRunID("run-0"), pipeline.WithSessionID("user-42")); err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(ctx, agent(scripted.CallTool("delete_files", `{}`), scripted.Reply("Freed 3 files.")),
		pipeline.UserInput("Free some space."), pipeline.WithRunID("run-1"), pipeline.WithSessionID("user-42"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("Run = %v, %v; want a pause", res, err)
	}
	before := marshal(t, store, "run-1")
	sessionBefore, err := store.List(ctx, "user-42", 0)
	if err != nil {
		t.Fatal(err)
	}

	fork, err := branch.Run(ctx, store, store, "run-1", branch.Target{RunID: "run-1b", SessionID: "user-42b"})
	if err != nil {
		t.Fatalf("branch.Run = %v", err)
	}
	if fork.ID() != "run-1b" || fork.SessionID() != "user-42b" || len(fork.Pending()) != 1 {
		t.Fatalf("fork = %s in %s with %d pending", fork.ID(), fork.SessionID(), len(fork.Pending()))
	}
	if after := marshal(t, store, "run-1"); after != before {
		t.Error("forking changed the original checkpoint")
	}
	forkSession, err := store.List(ctx, "user-42b", 0)
	if err != nil || !equalItems(forkSession, sessionBefore) {
		t.Fatalf("the fork's session = %v, %v; want a copy of %v", forkSession, err, sessionBefore)
	}

	// The original: approved, its model.
	orig, err := store.Load(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	must(t, orig.Approve(orig.Pending()[0].CallID))
	must(t, store.Save(ctx, orig))
	res, err = cp.Resume(ctx, runner, agent(scripted.Reply("Freed 3 files.")), "run-1")
	if out := finalOf(res); err != nil || out != "Freed 3 files." {
		t.Fatalf("resume the original = %q, %v", out, err)
	}
	// The fork: rejected, another model.
	must(t, fork.Reject(fork.Pending()[0].CallID, "keep them"))
	must(t, store.Save(ctx, fork))
	res, err = cp.Resume(ctx, runner, agent(scripted.Reply("Kept your files.")), "run-1b")
	if out := finalOf(res); err != nil || out != "Kept your files." {
		t.Fatalf("resume the fork = %q, %v", out, err)
	}
	if deleted != 1 {
		t.Errorf("the tool ran %d times, want once (the original's approval)", deleted)
	}
	a, _ := store.List(ctx, "user-42", 0)
	b, _ := store.List(ctx, "user-42b", 0)
	if last(a) != "Freed 3 files." || last(b) != "Kept your files." || len(a) != len(b) {
		t.Errorf("after both resumes: original ends %q (%d items), fork ends %q (%d items)", last(a), len(a), last(b), len(b))
	}

	// Forking again into the fork's session, or a run still going, fails.
	if _, err := branch.Run(ctx, store, store, "run-1", branch.Target{RunID: "run-1c", SessionID: "user-42b"}); !errors.Is(err, branch.ErrTargetExists) {
		t.Errorf("fork into a session with items = %v, want ErrTargetExists", err)
	}
	going := state.NewRun("run-2", "janitor")
	runcore.SetSessionID(going, "user-42")
	must(t, store.Save(ctx, going))
	if _, err := branch.Run(ctx, store, store, "run-2", branch.Target{RunID: "run-2b"}); !errors.Is(err, branch.ErrNotForkable) {
		t.Errorf("fork an unfinished run = %v, want ErrNotForkable", err)
	}
}

// TestForkSession forks a session at a position.
func TestForkSession(t *testing.T) {
	ctx := t.Context()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i, run := range []string{"a", "b", "c"} {
		items := []state.Item{state.UserMessage("q " + run).WithSeq(1), state.AssistantMessage("", "a "+run).WithSeq(2)}
		must(t, store.Append(ctx, "s", run, items))
		_ = i
	}
	orig, _ := store.List(ctx, "s", 0)
	n, err := branch.Session(ctx, store, "s", "s2", 3)
	if err != nil || n != 3 {
		t.Fatalf("Session = %d, %v", n, err)
	}
	got, _ := store.List(ctx, "s2", 0)
	if !equalItems(got, orig[:3]) {
		t.Errorf("fork = %v, want %v", got, orig[:3])
	}
	if again, _ := store.List(ctx, "s", 0); !equalItems(again, orig) {
		t.Error("forking changed the original session")
	}
	// The fork goes on by itself: a new run there does not touch s.
	must(t, store.Append(ctx, "s2", "d", []state.Item{state.UserMessage("other way").WithSeq(1)}))
	if again, _ := store.List(ctx, "s", 0); !equalItems(again, orig) {
		t.Error("the fork's append reached the original session")
	}
	if _, err := branch.Session(ctx, store, "s", "s2", 1); !errors.Is(err, branch.ErrTargetExists) {
		t.Errorf("fork into a session with items = %v, want ErrTargetExists", err)
	}
}

func marshal(t *testing.T, s state.Store, runID string) string {
	t.Helper()
	r, err := s.Load(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func equalItems(a, b []state.Item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func last(items []state.Item) string {
	if len(items) == 0 {
		return ""
	}
	return items[len(items)-1].Text()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func finalOf(res *pipeline.Result) string {
	if res == nil {
		return ""
	}
	return res.FinalOutput()
}
