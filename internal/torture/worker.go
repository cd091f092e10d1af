package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Stack is the torture agent wired to its stores: persistence on the
// session store, the [Checkpointer] on the state store, approval of
// transfers, and the hooks at every kill point.
type Stack struct {
	Runner   *pipeline.Runner
	Agent    *pipeline.Agent
	States   state.Store   // with the save hooks
	Sessions session.Store // with the append hooks
}

// NewStack wires the torture agent for plan to the stores; log receives
// the tools' executions and hooks (may be nil) is called at each hook
// point.
func NewStack(plan Plan, sessions session.Store, states state.Store, log *EffectLog, hooks Hooks) *Stack {
	hs := HookState(states, hooks)
	hsess := HookSession(sessions, hooks)
	cp := NewCheckpointer(hs)
	runner := pipeline.NewRunner(pipeline.WithMaxTurns(40), pipeline.WithMiddleware(
		persistence.Middleware(cp.Session(hsess), persistence.WithLimit(100)),
		cp.Middleware(),
		approval.Require(approval.ByTool(ToolTransfer)),
		ToolHook(hooks),
	))
	agent := &pipeline.Agent{Name: "torture", Instructions: "Do the work.", Model: NewModel(plan, hooks), Tools: NewTools(log)}
	return &Stack{Runner: runner, Agent: agent, States: hs, Sessions: hsess}
}

// A Worker drives the runs of a plan to their final output, sharing the
// stores with any number of other workers, in this process or others.
type Worker struct {
	Stack *Stack
	Plan  Plan
	// Concurrency is the number of runs driven at once (at least 1).
	Concurrency int
	// Recover makes the worker resume runs that are neither paused for a
	// decision nor finished: after a crash nobody else is running them.
	// Without it such runs are taken to be in progress elsewhere and left
	// alone.
	Recover bool

	stats WorkerStats
}

// WorkerStats counts what a worker did.
type WorkerStats struct {
	Started   int64 `json:"started"`   // runs started
	Resumed   int64 `json:"resumed"`   // resumes (after a decision or a crash)
	Decided   int64 `json:"decided"`   // approvals and rejections made
	Completed int64 `json:"completed"` // finished runs whose last commit the worker completed
	Conflicts int64 `json:"conflicts"` // typed conflicts (state.ErrConflict), each retried
	Items     int64 `json:"items"`     // items the runs this worker served recorded
}

// Stats returns a copy of the worker's counters.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{
		Started: atomic.LoadInt64(&w.stats.Started), Resumed: atomic.LoadInt64(&w.stats.Resumed),
		Decided: atomic.LoadInt64(&w.stats.Decided), Completed: atomic.LoadInt64(&w.stats.Completed),
		Conflicts: atomic.LoadInt64(&w.stats.Conflicts), Items: atomic.LoadInt64(&w.stats.Items),
	}
}

// Drive works on the plan's runs until every one is finished with its
// session complete, or ctx is done, or a run fails with anything but a
// conflict (which is counted and retried).
func (w *Worker) Drive(ctx context.Context) error {
	remaining := w.Plan.Runs
	conc := max(w.Concurrency, 1)
	for len(remaining) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		var (
			mu       sync.Mutex
			next     []RunSpec
			firstErr error
			progress atomic.Bool
			wg       sync.WaitGroup
		)
		sem := make(chan struct{}, conc)
		for _, spec := range remaining {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				done, moved, err := w.step(ctx, spec)
				if moved {
					progress.Store(true)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if !done {
					next = append(next, spec)
				}
			})
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		remaining = next
		if !progress.Load() && len(remaining) > 0 {
			select { // the remaining runs are in progress elsewhere
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

// step takes the run one step further: start it, complete it, decide its
// approvals and resume it, or resume it after a crash. done reports that
// the run is finished and complete; moved that the step did something.
func (w *Worker) step(ctx context.Context, spec RunSpec) (done, moved bool, err error) {
	st := w.Stack
	run, err := st.States.Load(ctx, spec.ID)
	if errors.Is(err, state.ErrNotFound) {
		run = state.NewRun(spec.ID, st.Agent.Name, 0)
		run.SetSessionID(spec.Session)
		if err := st.States.Save(ctx, run); err != nil { // claims the run
			return false, false, w.conflict(err)
		}
		return w.start(ctx, spec, run)
	}
	if err != nil {
		return false, false, fmt.Errorf("torture: load run %s: %w", spec.ID, err)
	}
	if _, finished := run.FinalOutput(); finished {
		return w.complete(ctx, run)
	}
	if run.Len() == 0 && run.Turn() == 0 {
		if !w.Recover {
			return false, false, nil // claimed by a worker starting it
		}
		if err := st.States.Save(ctx, run); err != nil {
			return false, false, w.conflict(err)
		}
		return w.start(ctx, spec, run)
	}
	decided, err := w.decide(run)
	if err != nil {
		return false, false, err
	}
	if !decided && !w.Recover {
		return false, false, nil // in progress elsewhere
	}
	res, err := approval.Resume(ctx, st.States, st.Runner, st.Agent, run)
	atomic.AddInt64(&w.stats.Resumed, 1)
	return w.after(ctx, spec, run, res, err)
}

func (w *Worker) start(ctx context.Context, spec RunSpec, run *state.Run) (done, moved bool, err error) {
	atomic.AddInt64(&w.stats.Started, 1)
	res, err := w.Stack.Runner.Run(ctx, w.Stack.Agent, pipeline.UserInput(spec.Input), pipeline.WithState(run))
	return w.after(ctx, spec, run, res, err)
}

func (w *Worker) after(ctx context.Context, spec RunSpec, run *state.Run, res *pipeline.Result, err error) (done, moved bool, _ error) {
	if res != nil {
		atomic.AddInt64(&w.stats.Items, int64(len(res.NewItems())))
	}
	if err != nil {
		return false, true, w.conflict(fmt.Errorf("torture: run %s: %w", spec.ID, err))
	}
	if res.Interrupted() {
		return false, true, nil
	}
	if _, finished := run.FinalOutput(); !finished {
		return false, true, fmt.Errorf("torture: run %s returned neither a final output nor an interruption", spec.ID)
	}
	done, _, err = w.complete(ctx, run)
	return done, true, err
}

// decide approves or rejects the run's pending calls if none of them has
// a decision yet, as the plan says; it reports whether it decided.
func (w *Worker) decide(run *state.Run) (bool, error) {
	pending := run.Pending()
	if len(pending) == 0 {
		return false, nil
	}
	for _, a := range pending {
		if _, exact, ok := run.DecisionFor(a.Tool, a.CallID); ok && exact {
			return false, nil // claimed by a worker that decided
		}
	}
	for _, a := range pending {
		var args callArgs
		if err := json.Unmarshal([]byte(a.Arguments), &args); err != nil {
			return false, fmt.Errorf("torture: run %s pending call %s: %w", run.ID(), a.CallID, err)
		}
		var err error
		if args.Reject {
			err = run.Reject(a.CallID, RejectMessage)
		} else {
			err = run.Approve(a.CallID)
		}
		if err != nil {
			return false, fmt.Errorf("torture: run %s: %w", run.ID(), err)
		}
		atomic.AddInt64(&w.stats.Decided, 1)
	}
	return true, nil
}

// complete finishes the commit of a finished run whose last append may
// have been lost: it appends the items above the session watermark (an
// idempotent append) and saves the run with the watermark moved.
func (w *Worker) complete(ctx context.Context, run *state.Run) (done, moved bool, err error) {
	items := run.Items()
	if items.Len() == 0 {
		return false, false, fmt.Errorf("torture: run %s finished without items", run.ID())
	}
	last := items.At(items.Len() - 1).Seq()
	wm := run.SessionWatermark()
	if wm >= last {
		return true, false, nil
	}
	if !w.Recover {
		return false, false, nil // its worker is committing it
	}
	var missing []state.Item
	for _, it := range items.All() {
		if it.Seq() > wm {
			missing = append(missing, it)
		}
	}
	if err := w.Stack.Sessions.Append(ctx, run.SessionID(), run.ID(), missing); err != nil {
		return false, false, fmt.Errorf("torture: complete run %s: %w", run.ID(), err)
	}
	run.SetSessionWatermark(last)
	if err := w.Stack.States.Save(ctx, run); err != nil {
		return false, false, w.conflict(err)
	}
	atomic.AddInt64(&w.stats.Completed, 1)
	return true, true, nil
}

// conflict counts and swallows a typed conflict; other errors pass.
func (w *Worker) conflict(err error) error {
	if errors.Is(err, state.ErrConflict) {
		atomic.AddInt64(&w.stats.Conflicts, 1)
		return nil
	}
	return err
}
