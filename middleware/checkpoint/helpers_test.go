package checkpoint_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// errCrashed is what every write returns once a world crashed: nothing a
// dead process does after its crash reaches the stores.
var errCrashed = errors.New("test: the process crashed")

// A world is the durable part of a deployment, which outlives processes:
// the checkpoint store, the session store, and the ledger of the side
// effects the tools had. A process writes through a view of it that can
// crash.
type world struct {
	states   *memstore.Store
	sessions *memory.Store
	effects  *pipelinetest.Ledger
}

func newWorld() *world {
	return &world{states: memstore.New(), sessions: memory.New(), effects: &pipelinetest.Ledger{}}
}

// A process is one worker: its own runner, model and checkpointer over
// the world's stores, through views that fail every write once it crashed.
type process struct {
	w       *world
	cp      *checkpoint.Checkpointer
	runner  *pipeline.Runner
	agent   *pipeline.Agent
	model   *scripted.Model
	crashed atomic.Bool
	saves   atomic.Int64 // checkpoint saves that landed
	tries   atomic.Int64 // checkpoint saves that reached the store

	// afterAppend, if set, is called after each append that landed; it
	// may crash the process.
	afterAppend func(p *process, items []state.Item)
	// inTool, if set, is called in each tool execution after the effect;
	// it may crash the process.
	inTool func(p *process, c *pipeline.ToolCall)
	// afterSave, if set, is called after each checkpoint save that
	// landed; it may crash the process.
	afterSave func(p *process, run *state.Run)
}

// A procConfig is what a process runs: its agent, the middleware inside
// persistence and the checkpointer, and the checkpointer's options.
type procConfig struct {
	newAgent func(p *process) *pipeline.Agent
	inner    []pipeline.Middleware
	cpOpts   []checkpoint.Option
}

type procOption func(*procConfig)

// withAgent runs the agent newAgent makes, with the middleware inner
// (none unless given) in place of the bank agent and its approval.
func withAgent(newAgent func(p *process) *pipeline.Agent, inner ...pipeline.Middleware) procOption {
	return func(c *procConfig) { c.newAgent, c.inner = newAgent, inner }
}

// withCheckpointOptions gives the checkpointer opts.
func withCheckpointOptions(opts ...checkpoint.Option) procOption {
	return func(c *procConfig) { c.cpOpts = opts }
}

// newProcess starts a worker on w, by default running the bank agent with
// the transfer behind approval. With checkpointed unset it has no
// checkpointer: the naive program that saves res.State() itself.
func newProcess(t *testing.T, w *world, name string, checkpointed bool, opts ...procOption) *process {
	t.Helper()
	cfg := procConfig{newAgent: bankAgent, inner: []pipeline.Middleware{approval.Require(approval.ByTool("transfer"))}}
	for _, o := range opts {
		o(&cfg)
	}
	p := &process{w: w, model: bankModel()}
	states := &crashStates{Store: w.states, p: p}
	var sessions session.Store = &crashSessions{Store: w.sessions, p: p}
	var mws []pipeline.Middleware
	if checkpointed {
		p.cp = checkpoint.New(states, append(slices.Clip(cfg.cpOpts), checkpoint.WithSession(sessions))...)
		mws = append(mws, p.cp.Middleware())
	} else {
		mws = append(mws, persistence.Middleware(sessions))
	}
	p.runner = pipeline.NewRunner(pipeline.WithMiddleware(append(mws, cfg.inner...)...))
	p.agent = cfg.newAgent(p)
	return p
}

func bankAgent(p *process) *pipeline.Agent {
	return &pipeline.Agent{
		Name:  "bank",
		Model: p.model,
		Tools: []pipeline.Tool{effectTool(p, "transfer"), effectTool(p, "pay")},
	}
}

func (p *process) crash() { p.crashed.Store(true) }

type crashStates struct {
	state.Store
	p *process
}

func (s *crashStates) Save(ctx context.Context, run *state.Run) error {
	if s.p.crashed.Load() {
		return errCrashed
	}
	s.p.tries.Add(1)
	if err := s.Store.Save(ctx, run); err != nil {
		return err
	}
	s.p.saves.Add(1)
	if s.p.afterSave != nil {
		s.p.afterSave(s.p, run)
	}
	return nil
}

func (s *crashStates) Delete(ctx context.Context, runID string) error {
	if s.p.crashed.Load() {
		return errCrashed
	}
	return s.Store.Delete(ctx, runID)
}

// ListRuns forwards to the world's store, so that the retentions that
// list runs can be tested through the crashing view.
func (s *crashStates) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	return s.Store.(state.Lister).ListRuns(ctx, q)
}

type crashSessions struct {
	session.Store
	p *process
}

func (s *crashSessions) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if s.p.crashed.Load() {
		return errCrashed
	}
	if err := s.Store.Append(ctx, sessionID, runID, items); err != nil {
		return err
	}
	if s.p.afterAppend != nil {
		s.p.afterAppend(s.p, items)
	}
	return nil
}

// effectTool returns a tool that records its executions in the world's
// ledger and calls the process's inTool hook.
func effectTool(p *process, name string) pipeline.Tool {
	return &pipelinetest.EffectTool{Name: name, Ledger: p.w.effects, Description: "Moves money.",
		During: func(_ context.Context, c *pipeline.ToolCall) error {
			if p.inTool != nil {
				p.inTool(p, c)
			}
			return nil
		}}
}

// bankModel plays the bank script from the run's own progress (a
// scripted.Rules model keeps its position in the run's state, so a
// process that resumes the run goes on where it was), with fresh IDs on
// every call as a real model gives: a transfer (which needs approval),
// then a message and a payment, then the final answer.
func bankModel() *scripted.Model {
	return scripted.Rules(scripted.On(scripted.Any(),
		scripted.CallTool("transfer", `{"amount":100}`),
		scripted.Respond(scripted.Text("Transferred; now paying the invoice."), scripted.Call("pay", `{"invoice":7}`)),
		scripted.Reply(finalAnswer),
	)).FreshIDs()
}

const finalAnswer = "All paid."

const (
	runID     = "run-1"
	sessionID = "session-1"
)

// pauseAtTransfer runs the script on a healthy process until the transfer
// waits for approval, then approves it in the checkpoint store, as a
// human's decision saved by an API would be.
func pauseAtTransfer(t *testing.T, w *world, checkpointed bool) {
	t.Helper()
	ctx := context.Background()
	p := newProcess(t, w, "p0", checkpointed)
	res, err := p.runner.Run(ctx, p.agent, pipeline.UserInput("Pay invoice 7."), pipeline.WithRunID(runID), pipeline.WithSessionID(sessionID))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !res.Interrupted() {
		t.Fatalf("run did not pause for the transfer")
	}
	if !checkpointed {
		if err := w.states.Save(ctx, res.State()); err != nil { // the naive program saves after each Runner call
			t.Fatal(err)
		}
	}
	run, err := w.states.Load(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Approve(res.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	if err := w.states.Save(ctx, run); err != nil {
		t.Fatal(err)
	}
}

// resumeByID goes on with the run: with the checkpointer's Resume, or as
// the naive program does, loading the checkpoint, resuming it and saving
// the result's state when the Runner call returns.
func resumeByID(ctx context.Context, p *process) (*pipeline.Result, error) {
	if p.cp != nil {
		return p.cp.Resume(ctx, p.runner, p.agent, runID)
	}
	run, err := p.w.states.Load(ctx, runID)
	if err != nil {
		return nil, err
	}
	res, err := p.runner.Resume(ctx, p.agent, run)
	if err != nil {
		return res, err
	}
	return res, (&crashStates{Store: p.w.states, p: p}).Save(ctx, run)
}

// checkSession checks that the session is valid model input (every call
// has exactly one output after it, nothing is stored twice) and returns
// the texts of its assistant messages.
func checkSession(t *testing.T, w *world) (messages []string) {
	t.Helper()
	items, err := w.sessions.List(context.Background(), sessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	var seen []string
	for i, it := range items {
		raw := string(it.Raw())
		if slices.Contains(seen, raw) {
			t.Errorf("session item %d (%s) is stored twice", i, it)
		}
		seen = append(seen, raw)
		switch {
		case it.Kind().IsCall():
			open[it.CallID()] = true
		case it.Kind().IsOutput():
			if !open[it.CallID()] {
				t.Errorf("session item %d: output of call %s without its call before it", i, it.CallID())
			}
			delete(open, it.CallID())
		case it.Kind() == state.KindAssistantMessage:
			messages = append(messages, it.Text())
		}
	}
	for id := range open {
		t.Errorf("session: call %s has no output", id)
	}
	return messages
}

// distinct returns the number of distinct strings in keys.
func distinct(keys []string) int {
	s := slices.Clone(keys)
	slices.Sort(s)
	return len(slices.Compact(s))
}
