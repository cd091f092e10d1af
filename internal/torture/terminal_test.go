package torture_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/internal/torture"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// lostReply is a session store whose final append of a run stores the
// items and then fails, as if the worker died right after the append
// landed: the checkpoint still holds the commit record.
type lostReply struct {
	session.Store
	fail bool
}

var errLost = errors.New("the worker died after the append landed")

func (s *lostReply) Append(ctx context.Context, sid, runID string, items []state.Item) error {
	if err := s.Store.Append(ctx, sid, runID, items); err != nil {
		return err
	}
	if s.fail && items[len(items)-1].Kind().IsOutput() && items[len(items)-1].Name() == torture.ToolFinish {
		return errLost
	}
	return nil
}

// TestFinishCommitCompletes is the reproduction of a violation the torture
// loop found: a run that ends at a terminal tool, whose final commit (the
// call and its output) landed but whose worker died before the next save,
// must be completed by checkpoint.Checkpointer.Resume without a conflict,
// and the session must hold exactly the checkpoint's items. The commit
// record lost the output's tool name, so resume appended a different
// output at the stored position (session.ErrConflict) forever, or, had the
// first append not landed, stored an output unlike the checkpoint's.
func TestFinishCommitCompletes(t *testing.T) {
	for _, landed := range []bool{true, false} {
		name := map[bool]string{true: "landed", false: "lost"}[landed]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			spec := torture.RunSpec{
				ID: "finish-" + name, Session: "finish-s", Input: "Finish it.", Finish: true,
				Steps: [][]torture.CallSpec{{{Tool: torture.ToolEffect}}},
			}
			plan := torture.Plan{Runs: []torture.RunSpec{spec}}
			logPath := filepath.Join(t.TempDir(), "effects.log")
			log, err := torture.OpenEffectLog(logPath)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { log.Close() })
			mem := memory.New()
			sess := &lostReply{Store: mem, fail: true}
			if !landed {
				sess.Store = failFinal{mem}
			}
			states := memstore.New()
			st := torture.NewStack(plan, sess, states, log, nil)
			w := &torture.Worker{Stack: st, Plan: plan, Recover: true}
			if err := w.Drive(ctx); err == nil {
				t.Fatal("the first drive succeeded, want the final append to fail")
			}
			sess.fail = false
			if !landed {
				sess.Store = mem
			}
			if err := w.Drive(ctx); err != nil {
				t.Fatalf("recovering the run: %v", err)
			}
			execs, _, err := torture.ReadEffectLog(logPath)
			if err != nil {
				t.Fatal(err)
			}
			res, err := torture.Check(ctx, mem, states, plan, execs, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range res.Violations {
				t.Error(v)
			}
			if res.Finished != 1 || res.Executions != 2 {
				t.Errorf("finished %d runs with %d executions, want 1 and 2", res.Finished, res.Executions)
			}
		})
	}
}

// failFinal fails the append of a finish call's output without storing
// anything.
type failFinal struct{ session.Store }

func (s failFinal) Append(ctx context.Context, sid, runID string, items []state.Item) error {
	if last := items[len(items)-1]; last.Kind().IsOutput() && last.Name() == torture.ToolFinish {
		return errLost
	}
	return s.Store.Append(ctx, sid, runID, items)
}

// failWithheld fails the append of a withheld finish output; with landed
// it stores the items first, as if the worker died right after the append.
type failWithheld struct {
	session.Store
	landed bool
	fail   bool
}

func (s *failWithheld) Append(ctx context.Context, sid, runID string, items []state.Item) error {
	last := items[len(items)-1]
	if !s.fail || last.Text() != persistence.WithheldOutput {
		return s.Store.Append(ctx, sid, runID, items)
	}
	if s.landed {
		if err := s.Store.Append(ctx, sid, runID, items); err != nil {
			return err
		}
	}
	return errLost
}

// TestTrippedCommitCompletes drives a run whose finish output trips the
// output guardrail, makes the append of the withheld finish call fail (or
// land and then fail, as if the worker died before its next save), and
// recovers the run: the session must then hold the finish call with its
// output withheld, the checkpoint's watermark must cover it, and the run
// must stay stopped by the tripwire. The guardrail refuses the resume, so
// it is persistence's run stage that completes the settlement: without it
// the session lacks the finish call or the watermark lags.
func TestTrippedCommitCompletes(t *testing.T) {
	for _, landed := range []bool{true, false} {
		name := map[bool]string{true: "landed", false: "lost"}[landed]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			spec := torture.RunSpec{
				ID: "trip-" + name, Session: "trip-s", Input: "Finish it.", Finish: true, Trip: true,
				Steps: [][]torture.CallSpec{{{Tool: torture.ToolEffect}}},
			}
			plan := torture.Plan{Runs: []torture.RunSpec{spec}}
			logPath := filepath.Join(t.TempDir(), "effects.log")
			log, err := torture.OpenEffectLog(logPath)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { log.Close() })
			mem := memory.New()
			sess := &failWithheld{Store: mem, landed: landed, fail: true}
			states := memstore.New()
			st := torture.NewStack(plan, sess, states, log, nil)
			w := &torture.Worker{Stack: st, Plan: plan, Recover: true}
			err = w.Drive(ctx)
			if !errors.Is(err, errLost) {
				t.Fatalf("the first drive: %v, want the withheld append to fail", err)
			}
			sess.fail = false
			if err := w.Drive(ctx); err != nil {
				t.Fatalf("recovering the run: %v", err)
			}
			execs, _, err := torture.ReadEffectLog(logPath)
			if err != nil {
				t.Fatal(err)
			}
			res, err := torture.Check(ctx, mem, states, plan, execs, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range res.Violations {
				t.Error(v)
			}
			if res.Tripped != 1 || res.Withheld != 1 {
				t.Errorf("tripped %d runs with %d outputs withheld, want 1 and 1", res.Tripped, res.Withheld)
			}
		})
	}
}
