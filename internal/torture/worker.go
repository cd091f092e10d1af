package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/middleware/retry"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Stack is the torture agents wired to their stores: persistence on the
// session store, a [checkpoint.Checkpointer] on the state store (calls of
// [ToolLookup] retryable: no save before they run), approval
// of transfers, an output guardrail that trips on [TripMarker], the
// hooks at every kill point, and innermost the retry middleware, which
// makes the failed flaky model calls again (see [RunSpec.Flaky]).
type Stack struct {
	Runner *pipeline.Runner
	// Agent is [AgentA], where every run starts; it and [AgentB] hand off
	// to each other, and both end a run at a call of [ToolFinish].
	Agent *pipeline.Agent
	// Model is the agents' model.
	Model       *Model
	Checkpoints *checkpoint.Checkpointer
	States      state.Store   // with the save hooks
	Sessions    session.Store // with the append hooks
	// Archive, if set, holds the finished runs whose checkpoints the
	// retention deleted (see [WithArchive]).
	Archive *Archive

	hooks Hooks
}

// A StackOption configures [NewStack].
type StackOption func(*stackConfig)

type stackConfig struct {
	archive   *Archive
	retention checkpoint.Retention
}

// WithArchive makes the stack record every finished run's checkpoint in a
// before its checkpoint is deleted, and its workers take an archived run
// whose checkpoint is gone to be done.
func WithArchive(a *Archive) StackOption { return func(c *stackConfig) { c.archive = a } }

// WithRetention sets the checkpointer's retention (default
// [checkpoint.KeepAll]). Any other needs [WithArchive], so that the
// checks can still read the runs it prunes.
func WithRetention(r checkpoint.Retention) StackOption {
	return func(c *stackConfig) { c.retention = r }
}

// NewStack wires the torture agent for plan to the stores; log receives
// the tools' executions and hooks (may be nil) is called at each hook
// point.
func NewStack(plan Plan, sessions session.Store, states state.Store, log *EffectLog, hooks Hooks, opts ...StackOption) *Stack {
	var cfg stackConfig
	for _, o := range opts {
		o(&cfg)
	}
	var (
		hs    state.Store
		hsess session.Store
	)
	if both, ok := sessions.(interface {
		session.Store
		state.Store
		saveAppender
	}); ok && any(sessions) == any(states) {
		// One store for both, as in production: checkpoint saves and
		// session appends go in one transaction.
		hb := &hookedBoth{Store: both, states: both, both: both, hooks: orNop(hooks), archive: cfg.archive}
		hs, hsess = hb, hb
	} else {
		hs = &hookedState{Store: states, hooks: orNop(hooks), archive: cfg.archive}
		hsess = HookSession(sessions, hooks)
	}
	cp := checkpoint.New(hs, checkpoint.WithRetryableTools(retryable), checkpoint.WithSession(hsess, persistence.WithLimit(100)),
		checkpoint.WithRetention(cfg.retention))
	runner := pipeline.NewRunner(pipeline.WithMaxTurns(40), pipeline.WithToolErrorText(ToolErrorText), pipeline.WithMiddleware(
		cp.Middleware(),
		approval.Require(approval.ByTool(ToolTransfer)),
		guardrails.Output(TripCheck(hooks), guardrails.WithName(GuardrailName)),
		ToolHook(hooks),
		retry.Middleware(retry.WithBackoff(time.Millisecond, 4*time.Millisecond)),
	))
	model, tools := NewModel(plan, hooks), NewTools(log)
	a := &pipeline.Agent{Name: AgentA, Instructions: "Do the work.", Model: model, Tools: tools, ToolUse: pipeline.StopAtTools(ToolFinish)}
	b := &pipeline.Agent{Name: AgentB, Instructions: "Do the rest of the work.", Model: model, Tools: tools, ToolUse: pipeline.StopAtTools(ToolFinish)}
	a.Handoffs = []pipeline.Handoff{{Agent: b}}
	b.Handoffs = []pipeline.Handoff{{Agent: a}}
	return &Stack{Runner: runner, Agent: a, Model: model, Checkpoints: cp, States: hs, Sessions: hsess, Archive: cfg.archive, hooks: orNop(hooks)}
}

// retryable names the calls the torture checkpointer runs without the
// save before them: lookups, which only read.
func retryable(c *pipeline.ToolCall) bool { return c.Name == ToolLookup }

// GuardrailName is the name of the torture stack's output guardrail.
const GuardrailName = "torture_trip"

// TripCheck returns the check of the torture stack's output guardrail: it
// trips on a final output that contains [TripMarker], and calls
// [HookGuardrail] (hooks may be nil) before its verdict.
func TripCheck(hooks Hooks) guardrails.Check[string] {
	hooks = orNop(hooks)
	return func(ctx context.Context, _ *pipeline.Agent, out string) (guardrails.Verdict, error) {
		hooks.At(ctx, HookGuardrail)
		if strings.Contains(out, TripMarker) {
			return guardrails.Trip("final output carries the trip marker"), nil
		}
		return guardrails.Pass(nil), nil
	}
}

// tripped reports whether the run's output guardrail tripped.
func tripped(run *state.Run) bool {
	for _, r := range run.GuardrailResults() {
		if r.Tripped && r.Stage == state.StageOutput && r.Name == GuardrailName {
			return true
		}
	}
	return false
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
	Started   int64 `json:"started"`   // runs started (not counting starts another worker's claim beat)
	Resumed   int64 `json:"resumed"`   // resumes (after a decision or a crash)
	Decided   int64 `json:"decided"`   // approvals and rejections made
	Completed int64 `json:"completed"` // finished runs whose last commit the worker completed
	Conflicts int64 `json:"conflicts"` // typed conflicts (state.ErrConflict), each retried
	Items     int64 `json:"items"`     // items the runs this worker served recorded
	// ModelRetries counts the flaky model calls that failed and were
	// made again.
	ModelRetries int64 `json:"model_retries"`
	// Pops counts the items popped from sessions while a run was paused.
	Pops int64 `json:"pops"`
}

// Stats returns a copy of the worker's counters.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{
		Started: atomic.LoadInt64(&w.stats.Started), Resumed: atomic.LoadInt64(&w.stats.Resumed),
		Decided: atomic.LoadInt64(&w.stats.Decided), Completed: atomic.LoadInt64(&w.stats.Completed),
		Conflicts: atomic.LoadInt64(&w.stats.Conflicts), Items: atomic.LoadInt64(&w.stats.Items),
		ModelRetries: w.Stack.Model.Retries(), Pops: atomic.LoadInt64(&w.stats.Pops),
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

// step takes the run one step further: start it, decide its approvals and
// resume it, or recover it after a crash with [checkpoint.Checkpointer.Resume]
// (which also completes the final commit of a finished run). done reports
// that the run is finished and complete; moved that the step did
// something.
func (w *Worker) step(ctx context.Context, spec RunSpec) (done, moved bool, err error) {
	st := w.Stack
	run, err := st.States.Load(ctx, spec.ID)
	if errors.Is(err, state.ErrNotFound) && st.Archive != nil && st.Archive.Has(spec.ID) {
		return true, false, nil // finished, committed and pruned
	}
	if errors.Is(err, state.ErrNotFound) {
		if spec.After != "" {
			if ok, err := w.ended(ctx, spec.After); err != nil || !ok {
				return false, false, err // the earlier run of its session first
			}
		}
		return w.start(ctx, spec)
	}
	if err != nil {
		return false, false, fmt.Errorf("torture: load run %s: %w", spec.ID, err)
	}
	if tripped(run) {
		if !w.Recover {
			return true, false, nil // stopped for good; its worker settles its session
		}
		return w.recover(ctx, spec) // completes its session if a crash cut it short
	}
	if _, finished := run.FinalOutput(); finished {
		if committed(run) {
			return true, false, nil
		}
		if !w.Recover {
			return false, false, nil // its worker is committing it
		}
		return w.recover(ctx, spec)
	}
	if n, err := w.popPaused(ctx, spec, run); err != nil {
		return false, false, err
	} else if n > 0 {
		return false, true, nil // loaded again in the next step, after the pops, as another process would
	}
	decided, err := w.decide(run)
	if err != nil {
		return false, false, err
	}
	if decided {
		res, err := approval.Resume(ctx, st.States, st.Runner, st.Agent, run)
		atomic.AddInt64(&w.stats.Resumed, 1)
		return w.after(spec, res, err)
	}
	if !w.Recover {
		return false, false, nil // in progress elsewhere
	}
	return w.recover(ctx, spec)
}

// start runs spec from its input; the run's first save claims its ID.
func (w *Worker) start(ctx context.Context, spec RunSpec) (done, moved bool, err error) {
	res, err := w.Stack.Runner.Run(ctx, w.Stack.Agent, pipeline.UserInput(spec.Input),
		pipeline.WithRunID(spec.ID), pipeline.WithSessionID(spec.Session))
	if se, ok := errors.AsType[*checkpoint.SaveError](err); !ok || se.Stage != checkpoint.StageClaim || !errors.Is(err, state.ErrConflict) {
		atomic.AddInt64(&w.stats.Started, 1) // not lost at the claim to another worker starting it
	}
	return w.after(spec, res, err)
}

// recover resumes a run whose worker is gone, or completes its final
// commit.
func (w *Worker) recover(ctx context.Context, spec RunSpec) (done, moved bool, err error) {
	res, err := w.Stack.Checkpoints.Resume(ctx, w.Stack.Runner, w.Stack.Agent, spec.ID)
	if fe, ok := errors.AsType[*checkpoint.FinishedError](err); ok {
		if fe.Completed {
			atomic.AddInt64(&w.stats.Completed, 1)
		}
		return true, fe.Completed, nil
	}
	atomic.AddInt64(&w.stats.Resumed, 1)
	return w.after(spec, res, err)
}

func (w *Worker) after(spec RunSpec, res *pipeline.Result, err error) (done, moved bool, _ error) {
	if res != nil {
		atomic.AddInt64(&w.stats.Items, int64(len(res.NewItems())))
	}
	if _, failed := errors.AsType[*persistence.AppendError](err); err != nil && spec.Trip && !failed &&
		errors.Is(err, pipeline.ErrOutputRejected) && !errors.Is(err, state.ErrConflict) {
		return true, true, nil // stopped by the output guardrail, as planned, its session settled
	}
	if spec.Pop == PopHistory && errors.Is(err, state.ErrHistoryChanged) {
		return true, true, nil // stays paused, as planned after a pop into its history
	}
	if err != nil {
		return false, true, w.conflict(fmt.Errorf("torture: run %s: %w", spec.ID, err))
	}
	if res.Interrupted() {
		return false, true, nil
	}
	return true, true, nil // finished: its final commit landed, or the run would have failed
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

// ended reports whether the run has ended: finished with its final
// commit in the session, or archived (pruned).
func (w *Worker) ended(ctx context.Context, runID string) (bool, error) {
	run, err := w.Stack.States.Load(ctx, runID)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return w.Stack.Archive != nil && w.Stack.Archive.Has(runID), nil
	case err != nil:
		return false, fmt.Errorf("torture: load run %s: %w", runID, err)
	}
	_, finished := run.FinalOutput()
	return finished && committed(run), nil
}

// popPaused pops the session of a run planned to be popped while paused
// (see [WithPops]) down to its target, before the run's approval is
// decided; a run with a decision was popped already. It returns how many
// items it popped, and calls [HookPop] after each pop; a worker after a
// kill pops what is left.
func (w *Worker) popPaused(ctx context.Context, spec RunSpec, run *state.Run) (int, error) {
	pending := run.Pending()
	if spec.Pop == "" || len(pending) == 0 {
		return 0, nil
	}
	for _, a := range pending {
		if _, exact, ok := run.DecisionFor(a.Tool, a.CallID); ok && exact {
			return 0, nil
		}
	}
	first, _ := w.Plan.Run(spec.After)
	items, err := w.Stack.Sessions.List(ctx, spec.Session, 0)
	if err != nil {
		return 0, fmt.Errorf("torture: run %s: list its session to pop it: %w", spec.ID, err)
	}
	n := 0
	for ; len(items)-n > popTarget(first, spec); n++ {
		if _, ok, err := w.Stack.Sessions.Pop(ctx, spec.Session); err != nil || !ok {
			return n, fmt.Errorf("torture: run %s: pop its session (%v): %w", spec.ID, ok, err)
		}
		atomic.AddInt64(&w.stats.Pops, 1)
		w.Stack.hooks.At(ctx, HookPop)
	}
	return n, nil
}

// committed reports whether the session holds every item of a finished
// run (its watermark reached the last item).
func committed(run *state.Run) bool {
	items := run.Items()
	return items.Len() > 0 && run.SessionWatermark() >= items.At(items.Len()-1).Seq()
}

// conflict counts and swallows a typed conflict; other errors pass.
func (w *Worker) conflict(err error) error {
	if errors.Is(err, state.ErrConflict) {
		atomic.AddInt64(&w.stats.Conflicts, 1)
		return nil
	}
	return err
}
