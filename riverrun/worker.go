package riverrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Registry maps agent names to the agents that start runs: jobs carry
// names, not values. It is read-only after [NewRegistry] and safe for
// concurrent use.
type Registry struct {
	agents map[string]*pipeline.Agent
}

// NewRegistry returns a registry of agents by their names. It panics on a
// nil agent, an empty name or a name given twice (a wiring mistake).
func NewRegistry(agents ...*pipeline.Agent) *Registry {
	r := &Registry{agents: make(map[string]*pipeline.Agent, len(agents))}
	for _, a := range agents {
		if a == nil || a.Name == "" {
			panic("riverrun: NewRegistry called with a nil or unnamed agent")
		}
		if _, dup := r.agents[a.Name]; dup {
			panic("riverrun: NewRegistry called with two agents named " + a.Name)
		}
		r.agents[a.Name] = a
	}
	return r
}

// Lookup returns the agent registered under name.
func (r *Registry) Lookup(name string) (*pipeline.Agent, bool) {
	a, ok := r.agents[name]
	return a, ok
}

// Status says how a run's job left the run.
type Status string

// The statuses a job records in its [Output].
const (
	// StatusFinished: the run has its final output, stored in the session.
	StatusFinished Status = "finished"
	// StatusInterrupted: the run paused; its pending calls wait for
	// decisions ([Client.Decide]).
	StatusInterrupted Status = "interrupted"
	// StatusFailed: the run stopped with an error (the job was cancelled,
	// or will retry: see [JobError]).
	StatusFailed Status = "failed"
)

// Output is what a run's job records with river.RecordOutput, readable
// from the job row with [OutputOf].
type Output struct {
	RunID       string           `json:"run_id"`
	Status      Status           `json:"status"`
	FinalOutput string           `json:"final_output,omitempty"`
	Pending     []state.Approval `json:"pending,omitempty"`
	Error       string           `json:"error,omitempty"`
	// Retry reports that a failed attempt will be retried.
	Retry bool `json:"retry,omitempty"`
}

// OutputOf decodes the [Output] a run's job recorded in its metadata;
// ok is false if it recorded none (the job has not run, or its worker
// died). metadata is a job row's Metadata.
func OutputOf(metadata []byte) (out Output, ok bool, err error) {
	var m struct {
		Output *Output `json:"output"`
	}
	if err := json.Unmarshal(metadata, &m); err != nil {
		return Output{}, false, fmt.Errorf("riverrun: job metadata: %w", err)
	}
	if m.Output == nil {
		return Output{}, false, nil
	}
	return *m.Output, true, nil
}

// A Worker is the River worker of [Kind] jobs: it starts, resumes and
// recovers runs with a runner and its checkpointer. Register it with
// river.AddWorker(workers, w). A Worker is safe for concurrent use; one
// serves every job of its client.
type Worker struct {
	river.WorkerDefaults[RunArgs]
	runner *pipeline.Runner
	cp     *checkpoint.Checkpointer
	agents *Registry
	cfg    config
}

var _ river.Worker[RunArgs] = (*Worker)(nil)

// NewWorker returns a worker that runs jobs with runner, whose chain must
// hold cp's middleware, cp made with checkpoint.WithSession (see
// middleware/checkpoint), and looks their agents
// up in agents. It panics if any of them is nil.
func NewWorker(runner *pipeline.Runner, cp *checkpoint.Checkpointer, agents *Registry, opts ...Option) *Worker {
	if runner == nil || cp == nil || agents == nil {
		panic("riverrun: NewWorker called with a nil runner, checkpointer or registry")
	}
	return &Worker{runner: runner, cp: cp, agents: agents, cfg: newConfig(opts)}
}

// Timeout returns the job timeout set with [WithTimeout], or 0 (the
// client's JobTimeout).
func (w *Worker) Timeout(*river.Job[RunArgs]) time.Duration { return w.cfg.timeout }

// extensionKey is this package's record in a run's checkpoint: the
// starting agent, which resume jobs enqueued from the checkpoint alone
// need.
const extensionKey = "turnkit.riverrun"

type extState struct {
	Agent string `json:"agent"`
}

// startAgent returns the run's starting agent as recorded by the worker
// that started it, or the run's current agent.
func startAgent(run *state.Run) string {
	if raw, ok := run.Extension(extensionKey); ok {
		var ext extState
		if json.Unmarshal(raw, &ext) == nil && ext.Agent != "" {
			return ext.Agent
		}
	}
	return run.Agent()
}

// Work runs the job's run on from wherever its checkpoint says it is:
//
//   - no checkpoint: a start job starts the run from its input (the first
//     save claims the run ID); a resume job is cancelled
//     ([ErrNoCheckpoint]);
//   - a finished run: its final commit is completed if a crash cut it
//     short (checkpoint.Checkpointer.Resume), and the job completes; the
//     model is not asked again;
//   - a run paused with a call that has no decision: the job completes
//     with the pending calls recorded; a decision enqueues the resume;
//   - any other run (decided, or left mid-run by a dead worker, a failed
//     or cancelled attempt): it is resumed from the checkpoint with
//     checkpoint.Checkpointer.Resume. Calls open when the worker died run
//     again under their own idempotency keys unless the session holds
//     their outputs.
//
// Then, by the run's outcome: a final output or an interruption completes
// the job, with its [Output] recorded. An error is recorded too and, as a
// [*JobError], either returned for River to retry with its backoff (a
// retryable *pipeline.ModelError, state.ErrConflict, the job's context
// done, a failed read or write of the checkpoint or the session, or what
// [WithRetryable] adds) or returned wrapped in river.JobCancel, which
// fails the job for good (a tripwire, max turns, an unknown tool, a
// non-retryable model error, a checkpoint that does not decode, a session
// that conflicts with the run, ...).
//
// state.ErrConflict means another worker saved the run first: it owns the
// run now (a job rescued while its worker was alive, or a resume racing
// one). The attempt stops at once with nothing more stored, and the job
// retries: its next attempt finds the run finished or paused (and
// completes) or abandoned (and resumes it).
//
// Cancelling the job (river's JobCancel) cancels the run's context: the
// run stops at its next blocking point, the checkpointer saves it as far
// as it got, and [Client.EnqueueResume] takes it on later.
func (w *Worker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	args := job.Args
	out, err := w.work(ctx, args)
	if err == nil {
		return w.record(ctx, out)
	}
	retry := w.retryable(ctx, err)
	jerr := &JobError{RunID: args.RunID, Attempt: job.Attempt, Retry: retry, Err: err}
	out = Output{RunID: args.RunID, Status: StatusFailed, Error: err.Error(), Retry: retry}
	if rerr := w.record(ctx, out); rerr != nil {
		return errors.Join(jerr, rerr)
	}
	if retry {
		return jerr
	}
	return river.JobCancel(jerr)
}

func (w *Worker) record(ctx context.Context, out Output) error {
	if err := river.RecordOutput(ctx, out); err != nil {
		return fmt.Errorf("riverrun: record the output of run %s: %w", out.RunID, err)
	}
	return nil
}

// work runs the job and says how the run ended.
func (w *Worker) work(ctx context.Context, args RunArgs) (Output, error) {
	out := Output{RunID: args.RunID}
	agent, ok := w.agents.Lookup(args.Agent)
	if !ok {
		return out, fmt.Errorf("%w %q", ErrUnknownAgent, args.Agent)
	}
	run, err := w.cp.Store().Load(ctx, args.RunID)
	var res *pipeline.Result
	switch {
	case errors.Is(err, state.ErrNotFound):
		if args.Resume != 0 {
			return out, ErrNoCheckpoint
		}
		res, err = w.start(ctx, agent, args)
	case err != nil:
		return out, err
	default:
		if _, finished := run.FinalOutput(); !finished && undecided(run) {
			out.Status, out.Pending = StatusInterrupted, run.Pending()
			return out, nil
		}
		res, err = w.cp.Resume(ctx, w.runner, agent, args.RunID)
	}
	if fe, ok := errors.AsType[*checkpoint.FinishedError](err); ok {
		out.Status, out.FinalOutput = StatusFinished, fe.FinalOutput
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if res.Interrupted() {
		out.Status, out.Pending = StatusInterrupted, res.Interruptions()
		return out, nil
	}
	out.Status, out.FinalOutput = StatusFinished, res.FinalOutput()
	return out, nil
}

// start starts the run, recording its starting agent in its checkpoint.
func (w *Worker) start(ctx context.Context, agent *pipeline.Agent, args RunArgs) (*pipeline.Result, error) {
	input, err := args.Items()
	if err != nil {
		return nil, err
	}
	run := state.NewRun(args.RunID, agent.Name)
	ext, err := json.Marshal(extState{Agent: agent.Name})
	if err != nil {
		return nil, err
	}
	run.SetExtension(extensionKey, ext)
	return w.runner.Run(ctx, agent, input, pipeline.WithState(run), pipeline.WithSessionID(args.SessionID))
}

// undecided reports whether the run waits for a decision on a call.
func undecided(run *state.Run) bool {
	for _, a := range run.Pending() {
		if _, ok := run.DecisionOn(a); !ok {
			return true
		}
	}
	return false
}

// retryable reports whether a run's error is worth another attempt.
func (w *Worker) retryable(ctx context.Context, err error) bool {
	if me, ok := errors.AsType[*pipeline.ModelError](err); ok && me.Retryable {
		return true
	}
	if errors.Is(err, state.ErrConflict) || ctx.Err() != nil {
		return true
	}
	if storeFailure(err) && !corrupt(err) {
		return true
	}
	return w.cfg.retryable != nil && w.cfg.retryable(err)
}

// storeFailure reports a failed read or write of a checkpoint or a
// session: the run stopped where a retry takes it on safely.
func storeFailure(err error) bool {
	if _, ok := errors.AsType[*state.StoreError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*checkpoint.SaveError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*checkpoint.CompleteError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*persistence.AppendError](err); ok {
		return true
	}
	_, ok := errors.AsType[*persistence.LoadError](err)
	return ok
}

// corrupt reports a store failure that another attempt would meet again:
// a checkpoint that does not decode, or a session that holds another item
// at a run's position.
func corrupt(err error) bool {
	for _, target := range []error{state.ErrMalformed, state.ErrInvalid, state.ErrTooLarge, state.ErrVersion, state.ErrTampered, session.ErrConflict} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
