package branch_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/branch"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// TestForkCheckpointAtomic runs a crash-safe run in a fork through a
// checkpointer whose session store is a fork store over its state store:
// on the database backends, plain and sealed, each save and the append it
// guards stay one transaction (branch.Store passes SaveAppend through), and
// the run's history is the fork's, shared items included. Over memory
// (two stores) the checkpointer saves, then appends.
//
// Checked to fail without it: Atomic was false on every backend, the
// fork store having no SaveAppend.
func TestForkCheckpointAtomic(t *testing.T) {
	eachBackend(t, func(t *testing.T, b linkBackend) {
		ctx := t.Context()
		s := branch.Wrap(b.sessions)
		must(t, s.Append(ctx, "p", "a", msgs("a1", "a2", "a3")))
		if _, err := branch.Session(ctx, s, "p", "f", 2); err != nil {
			t.Fatal(err)
		}
		cp := checkpoint.New(b.runs, checkpoint.WithSession(s))
		if want := any(b.sessions) == any(b.runs); cp.Atomic() != want {
			t.Fatalf("Atomic() = %v, want %v: one transaction exactly when one store keeps both", cp.Atomic(), want)
		}
		var seen string
		saw := func(c *pipeline.ModelCall) bool {
			var b []state.Item
			for i := range c.Input.Len() {
				b = append(b, c.Input.At(i))
			}
			seen = texts(b)
			return true
		}
		runner := pipeline.NewRunner(pipeline.WithMiddleware(cp.Middleware()))
		agent := &pipeline.Agent{Name: "a", Model: scripted.Rules(scripted.On(saw, scripted.Reply("b2")))}
		res, err := runner.Run(ctx, agent, pipeline.UserInput("b1"), pipeline.WithRunID("run-f"), pipeline.WithSessionID("f"))
		if err != nil || finalOf(res) != "b2" {
			t.Fatalf("Run in the fork = %v, %v", finalOf(res), err)
		}
		if seen != "a1 a2 b1" {
			t.Errorf("the model saw %q, want the shared items and the input", seen)
		}
		listIs(t, s, "f", "a1 a2 b1 b2")
		listIs(t, s, "p", "a1 a2 a3")
		stored, err := b.runs.Load(ctx, "run-f")
		if err != nil {
			t.Fatal(err)
		}
		if out, done := stored.FinalOutput(); !done || out != "b2" {
			t.Errorf("the fork run's checkpoint: final output %q, %v", out, done)
		}
	})
}

// TestForkSaveAppendRefused: SaveAppend of a fork store refuses the link's
// run ID, as Append does, and over a store without SaveAppend (memory)
// fails with errors.ErrUnsupported; neither writes anything.
func TestForkSaveAppendRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, b linkBackend) {
		s := branch.Wrap(b.sessions)
		want := session.ErrInvalid
		if _, ok := b.sessions.(encrypt.Backend); !ok {
			want = errors.ErrUnsupported
		}
		err := s.SaveAppend(t.Context(), state.NewRun("turnkit.branch.link", "a"), "f", msgs("x"))
		if !errors.Is(err, want) {
			t.Errorf("SaveAppend under the link's run ID = %v, want %v", err, want)
		}
		listIs(t, s, "f", "")
	})
}

// reads counts the reads of items through it (List, ListBefore, ListPage).
type reads struct {
	session.Store
	n atomic.Int64
}

func (r *reads) List(ctx context.Context, sid string, limit int) ([]state.Item, error) {
	r.n.Add(1)
	return r.Store.List(ctx, sid, limit)
}

func (r *reads) ListBefore(ctx context.Context, sid, runID string, q session.HistoryQuery) (session.History, error) {
	r.n.Add(1)
	return r.Store.ListBefore(ctx, sid, runID, q)
}

func (r *reads) ListPage(ctx context.Context, sid string, q session.PageQuery) (session.ItemPage, error) {
	r.n.Add(1)
	return r.Store.(session.Pager).ListPage(ctx, sid, q)
}

// TestForkLookupMiss: a Lookup in a fork of a position that no session up
// the chain holds reads no items (an index lookup in each session); one
// the parent holds reads the shared items to check it is shared.
//
// Checked to fail without it: every miss read the parent's items.
func TestForkLookupMiss(t *testing.T) {
	ctx := t.Context()
	r := &reads{Store: memory.New()}
	s := branch.Wrap(r)
	must(t, s.Append(ctx, "p", "a", msgs("a1", "a2")))
	if _, err := branch.Session(ctx, s, "p", "f", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.Session(ctx, s, "f", "g", 2); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, "g", "b", msgs("b1")))
	r.n.Store(0)
	if _, ok, err := s.Lookup(ctx, "g", "b", 2); ok || err != nil {
		t.Fatalf("Lookup of a position nobody holds = %v, %v", ok, err)
	}
	if n := r.n.Load(); n != 0 {
		t.Errorf("a Lookup miss read items %d times, want none", n)
	}
	if it, ok, err := s.Lookup(ctx, "g", "a", 2); err != nil || !ok || it.Text() != "a2" {
		t.Fatalf("Lookup of a shared item = %v, %v, %v", it, ok, err)
	}
	if r.n.Load() == 0 {
		t.Error("a shared item was found without reading the shared items")
	}
}
