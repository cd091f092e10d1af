package checkpoint_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A keeper plays runs of one session, each on workers of its own (fresh
// checkpointers, which remember nothing), under one retention.
type keeper struct {
	t    *testing.T
	w    *world
	opts []checkpoint.Option
}

func (k *keeper) worker(name string) *process {
	return newProcess(k.t, k.w, name, true, withCheckpointOptions(k.opts...))
}

// pause runs id until its transfer waits for approval, and approves it
// in the store, as a human's decision saved by an API would be.
func (k *keeper) pause(id string) {
	k.t.Helper()
	ctx := context.Background()
	p := k.worker(id)
	res, err := p.runner.Run(ctx, p.agent, pipeline.UserInput("Pay invoice 7."), pipeline.WithRunID(id), pipeline.WithSessionID(sessionID))
	if err != nil || !res.Interrupted() {
		k.t.Fatalf("run %s = %v; want a pause", id, err)
	}
	run, err := k.w.states.Load(ctx, id)
	if err != nil {
		k.t.Fatal(err)
	}
	if err := run.Approve(res.Interruptions()[0].CallID); err != nil {
		k.t.Fatal(err)
	}
	if err := k.w.states.Save(ctx, run); err != nil {
		k.t.Fatal(err)
	}
}

// finish runs id to its final answer.
func (k *keeper) finish(id string) {
	k.t.Helper()
	k.pause(id)
	p := k.worker(id + "-resume")
	res, err := p.cp.Resume(context.Background(), p.runner, p.agent, id)
	if err != nil || res.FinalOutput() != finalAnswer {
		k.t.Fatalf("resume %s = %v; want the final answer", id, err)
	}
}

// crash runs id on a worker that arm makes crash.
func (k *keeper) crash(id string, arm func(p *process)) {
	k.t.Helper()
	k.pause(id)
	p := k.worker(id + "-crash")
	arm(p)
	if _, err := p.cp.Resume(context.Background(), p.runner, p.agent, id); !errors.Is(err, errCrashed) {
		k.t.Fatalf("resume %s on a crashing worker = %v; want the crash", id, err)
	}
}

// crashInTool: the worker dies while the payment runs, leaving the run
// unfinished.
func crashInTool(p *process) {
	p.inTool = func(p *process, c *pipeline.ToolCall) {
		if c.Name == "pay" {
			p.crash()
		}
	}
}

// crashBeforeFinalCommit: the worker dies after the save that marks the
// run finished and records its final commit, before the commit: the run
// is listed as finished, and only its checkpoint can complete the commit.
func crashBeforeFinalCommit(p *process) {
	p.afterSave = func(p *process, run *state.Run) {
		if _, done := run.FinalOutput(); done {
			if _, ok := run.Extension("turnkit.checkpoint"); ok {
				p.crash()
			}
		}
	}
}

// complete resumes id, whose final commit a crash cut short.
func (k *keeper) complete(id string) {
	k.t.Helper()
	p := k.worker(id + "-complete")
	_, err := p.cp.Resume(context.Background(), p.runner, p.agent, id)
	if fe, ok := errors.AsType[*checkpoint.FinishedError](err); !ok || !fe.Completed {
		k.t.Fatalf("resume %s = %v; want its final commit completed", id, err)
	}
}

// stored checks which of the runs have a checkpoint, and that those kept
// are in the status want gives.
func (k *keeper) stored(want map[string]state.RunStatus, gone ...string) {
	k.t.Helper()
	ctx := context.Background()
	for id, st := range want {
		run, err := k.w.states.Load(ctx, id)
		if err != nil {
			k.t.Errorf("run %s: %v; want it kept", id, err)
			continue
		}
		if run.Status() != st {
			k.t.Errorf("run %s is %v, want %v", id, run.Status(), st)
		}
	}
	for _, id := range gone {
		if _, err := k.w.states.Load(ctx, id); !errors.Is(err, state.ErrNotFound) {
			k.t.Errorf("run %s: Load = %v; want it pruned", id, err)
		}
	}
}

// finalAnswers counts the final answers in the session.
func (k *keeper) finalAnswers() int {
	k.t.Helper()
	n := 0
	for _, m := range checkSessionMessages(k.t, k.w) {
		if m == finalAnswer {
			n++
		}
	}
	return n
}

// checkSessionMessages returns the texts of the session's assistant
// messages.
func checkSessionMessages(t *testing.T, w *world) []string {
	t.Helper()
	items, err := w.sessions.List(context.Background(), sessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, it := range items {
		if it.Kind() == state.KindAssistantMessage {
			msgs = append(msgs, it.Text())
		}
	}
	return msgs
}

// TestKeepLast: the newest finished runs of the session stay, older
// finished ones go as later runs finish; a paused run, a run a crash left
// unfinished, and a finished run whose final commit a crash cut short are
// never pruned, the last until its commit is completed.
func TestKeepLast(t *testing.T) {
	k := &keeper{t: t, w: newWorld(), opts: []checkpoint.Option{checkpoint.WithRetention(checkpoint.KeepLast(1))}}
	paused, unfinished, finished := state.RunPaused, state.RunUnfinished, state.RunFinished

	k.finish("b")
	k.pause("a")
	k.crash("c", crashInTool)
	k.crash("x", crashBeforeFinalCommit)
	k.stored(map[string]state.RunStatus{"a": paused, "b": finished, "c": unfinished, "x": finished})

	k.finish("d")
	k.stored(map[string]state.RunStatus{"a": paused, "c": unfinished, "x": finished, "d": finished}, "b")

	k.finish("e")
	k.stored(map[string]state.RunStatus{"a": paused, "c": unfinished, "x": finished, "e": finished}, "b", "d")

	k.complete("x") // committed now, and older than e by its first save
	k.stored(map[string]state.RunStatus{"a": paused, "c": unfinished, "e": finished}, "b", "d", "x")

	k.finish("f")
	k.stored(map[string]state.RunStatus{"a": paused, "c": unfinished, "f": finished}, "b", "d", "e", "x")
	if n := k.finalAnswers(); n != 5 {
		t.Errorf("the session holds %d final answers, want 5 (b, d, e, x, f)", n)
	}
}

// A clock is a time a test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(d time.Duration) {
	c.mu.Lock()
	c.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d)
	c.mu.Unlock()
}

// TestKeepFor: a finished run stays for the duration after it finished,
// and goes when a run of its session finishes later than that; runs that
// are paused, unfinished or wait for their final commit stay, and a
// prune stops at one of the latter.
func TestKeepFor(t *testing.T) {
	clk := &clock{}
	k := &keeper{t: t, w: newWorld(), opts: []checkpoint.Option{
		checkpoint.WithRetention(checkpoint.KeepFor(time.Hour)), checkpoint.WithClock(clk.Now),
	}}
	paused, unfinished, finished := state.RunPaused, state.RunUnfinished, state.RunFinished

	clk.set(0)
	k.finish("b")
	clk.set(10 * time.Minute)
	k.pause("a")
	clk.set(20 * time.Minute)
	k.crash("c", crashInTool)
	clk.set(50 * time.Minute)
	k.finish("d") // b finished 50 minutes ago: kept
	k.stored(map[string]state.RunStatus{"a": paused, "b": finished, "c": unfinished, "d": finished})

	clk.set(70 * time.Minute)
	k.finish("e") // b: 70 minutes, pruned; d: 20 minutes
	k.stored(map[string]state.RunStatus{"a": paused, "c": unfinished, "d": finished, "e": finished}, "b")

	clk.set(80 * time.Minute)
	k.crash("x", crashBeforeFinalCommit)
	clk.set(3 * time.Hour)
	k.finish("f") // d and e are old; x waits for its commit and stops the prune after them
	k.stored(map[string]state.RunStatus{"a": paused, "c": unfinished, "x": finished, "f": finished}, "b", "d", "e")

	clk.set(3*time.Hour + 10*time.Minute)
	k.complete("x") // finished now, by its record
	k.stored(map[string]state.RunStatus{"a": paused, "c": unfinished, "x": finished, "f": finished}, "b", "d", "e")

	clk.set(6 * time.Hour)
	k.finish("g")
	k.stored(map[string]state.RunStatus{"a": paused, "c": unfinished, "g": finished}, "b", "d", "e", "f", "x")
	if n := k.finalAnswers(); n != 6 {
		t.Errorf("the session holds %d final answers, want 6 (b, d, e, x, f, g)", n)
	}
}

// TestKeepLastNeedsLister: KeepLast and KeepFor read a state.Lister; New
// says so at construction when the store is not one.
func TestKeepLastNeedsLister(t *testing.T) {
	type plain struct{ state.Store }
	for _, r := range []checkpoint.Retention{checkpoint.KeepLast(3), checkpoint.KeepFor(time.Hour)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New with %+v over a store without ListRuns did not panic", r)
				}
			}()
			checkpoint.New(plain{newWorld().states}, checkpoint.WithRetention(r))
		}()
	}
	if checkpoint.KeepLast(0) != checkpoint.DeleteFinished || checkpoint.KeepFor(0) != checkpoint.DeleteFinished {
		t.Error("KeepLast(0) and KeepFor(0) are not DeleteFinished")
	}
	checkpoint.New(plain{newWorld().states}, checkpoint.WithRetention(checkpoint.DeleteFinished)) // needs no listing
}
