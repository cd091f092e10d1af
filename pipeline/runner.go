package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// A Runner runs agents: a loop of turns, each served by the middleware
// chain around the core. The chain is built once, in [NewRunner]; a Runner
// is safe for concurrent use and runs any number of runs at once.
type Runner struct {
	cfg   config
	run   RunHandler
	turn  Handler
	model Model
	tool  ToolHandler
}

// NewRunner returns a runner with the given options. The middleware chain
// (see [WithMiddleware]) is composed here, once.
func NewRunner(opts ...Option) *Runner {
	r := &Runner{cfg: newConfig(opts)}
	mws := r.cfg.middleware
	if r.cfg.recover {
		mws = withRecovery(mws)
	}
	chain := Chain(mws...)
	r.model = chain.Model(ModelFunc(coreModel))
	r.tool = chain.Tool(ToolHandlerFunc(r.coreTool))
	r.turn = chain.Turn(HandlerFunc(r.coreTurn))
	r.run = chain.Run(RunHandlerFunc(r.coreRun))
	return r
}

// UserInput returns the input of a run that starts with one user message.
func UserInput(text string) []state.Item { return []state.Item{state.UserMessage(text)} }

// Run runs agent on input until a final output, an interruption (a call
// waits for approval) or an error.
//
// The result is non-nil whenever the run started, error or not: on error
// its State is the resumable state as far as it got. The error of a run
// that started is a [*RunError], which carries a detached copy of that
// state too (see [StateOf]). The input items are placed at the run's first
// positions; the caller's slice is not kept.
func (r *Runner) Run(ctx context.Context, agent *Agent, input []state.Item, opts ...RunOption) (*Result, error) {
	run, err := r.start(agent, input, opts)
	if err != nil {
		return nil, err
	}
	return r.execute(ctx, agent, run, input, false, nil)
}

// Stream runs agent on input like [Runner.Run] and yields the run's events
// as they happen: the same loop with an event sink, so both modes record the
// same items and make the same decisions. The last value is a
// [RunCompleted] event, or an error. The error of a run that started is a
// [*RunError]: its Result method returns what [Runner.Run] would have
// returned beside the error, and [StateOf] the resumable state, so a failed
// stream loses nothing. Breaking out of the loop cancels the run and waits
// for it to stop; no goroutine outlives the loop.
func (r *Runner) Stream(ctx context.Context, agent *Agent, input []state.Item, opts ...RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		run, err := r.start(agent, input, opts)
		if err != nil {
			yield(nil, err)
			return
		}
		streamLoop(ctx, yield, func(ctx context.Context, emit func(Event)) (*Result, error) {
			return r.execute(ctx, agent, run, input, false, emit)
		})
	}
}

// Resume continues a paused or interrupted run from its state, live or
// decoded from a checkpoint in another process: it runs the calls that
// waited for a decision, then goes on as the live run would have. agent is
// the run's starting agent; the current agent is found by name among the
// agents reachable from it through handoffs.
//
// Resume records into run. Like Run, the result is non-nil whenever the
// run went on, and the error is then a [*RunError] carrying a detached copy
// of the state. A run that finished, or never started, has nothing to
// resume: Resume returns an error wrapping [ErrNothingToResume] and leaves
// run as it was.
func (r *Runner) Resume(ctx context.Context, agent *Agent, run *state.Run) (*Result, error) {
	current, err := r.prepareResume(agent, run)
	if err != nil {
		return nil, err
	}
	return r.execute(ctx, current, run, nil, true, nil)
}

// ResumeStream is [Runner.Resume] yielding events, like [Runner.Stream];
// its error is a [*RunError] as well once the run went on.
func (r *Runner) ResumeStream(ctx context.Context, agent *Agent, run *state.Run) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		current, err := r.prepareResume(agent, run)
		if err != nil {
			yield(nil, err)
			return
		}
		streamLoop(ctx, yield, func(ctx context.Context, emit func(Event)) (*Result, error) {
			return r.execute(ctx, current, run, nil, true, emit)
		})
	}
}

func (r *Runner) start(agent *Agent, input []state.Item, opts []RunOption) (*state.Run, error) {
	if agent == nil {
		return nil, errors.New("pipeline: run: nil agent")
	}
	if err := agent.Validate(); err != nil {
		return nil, err
	}
	var rc runConfig
	for _, o := range opts {
		if o != nil {
			o.applyRun(&rc)
		}
	}
	for i, it := range input {
		if it.IsZero() {
			return nil, fmt.Errorf("pipeline: run: input[%d] is the zero Item", i)
		}
	}
	run := rc.run
	if run == nil {
		id := rc.runID
		if id == "" {
			id = r.cfg.newID()
		}
		run = state.NewRun(id, agent.Name)
	} else {
		if run.Len() > 0 || run.Turn() > 0 {
			return nil, fmt.Errorf("pipeline: run: state %s already has items; use Resume", run.ID())
		}
		if rc.runID != "" && rc.runID != run.ID() {
			return nil, fmt.Errorf("pipeline: run: WithRunID(%q) conflicts with WithState of run %q: give one of them", rc.runID, run.ID())
		}
		runcore.SetAgent(run, agent.Name)
	}
	if rc.maxTurns > 0 {
		runcore.SetMaxTurns(run, rc.maxTurns)
	}
	if rc.sessionID != "" {
		runcore.SetSessionID(run, rc.sessionID)
	}
	for _, e := range rc.extensions {
		run.SetExtension(e.key, e.value)
	}
	return run, nil
}

func (r *Runner) prepareResume(agent *Agent, run *state.Run) (*Agent, error) {
	if agent == nil || run == nil {
		return nil, errors.New("pipeline: resume: nil agent or run")
	}
	if _, done := run.FinalOutput(); done {
		return nil, wrapf(ErrNothingToResume, "it finished", "pipeline: resume run %s", run.ID())
	}
	if run.Len() == 0 && run.Turn() == 0 {
		return nil, wrapf(ErrNothingToResume, "it never started; start it with Run and WithState", "pipeline: resume run %s", run.ID())
	}
	current := agent.find(run.Agent())
	if current == nil {
		return nil, &UnknownAgentError{Agent: run.Agent()}
	}
	if err := agent.Validate(); err != nil {
		return nil, err
	}
	return current, nil
}

// A RunCall is the request of the run stage.
type RunCall struct {
	// Run is the run's state.
	Run *state.Run
	// Agent is the agent the run starts (or resumes) with.
	Agent *Agent
	// Input is the run's input, nil on resume.
	Input []state.Item
	// Resumed reports a resumption of a paused or interrupted run.
	Resumed bool

	emit  func(Event)
	frame *runFrame // where the core's run loop finds its result and Turn; nil: it makes them
}

// A runFrame is what one invocation of the run stage needs for its whole
// life, in one allocation: the call handed to the chain, and the core's
// result and the Turn that serves every turn (see coreRun). A run of 10
// tool turns made them as three, 2 of its 120 allocations.
type runFrame struct {
	call  RunCall
	res   Result
	turn  Turn
	taken atomic.Bool
}

// take returns the frame's result and Turn for the core's run loop, or
// fresh ones when there is no frame or the core already took them: a run
// stage that calls the next one again with the same call (a retry, a
// copy of the call) gets a result of its own each time, as it did when
// the core made every one.
func (f *runFrame) take() (*Result, *Turn) {
	if f == nil || !f.taken.CompareAndSwap(false, true) {
		return new(Result), new(Turn)
	}
	return &f.res, &f.turn
}

// Emit sends an event to the run's stream, if the run streams.
func (c *RunCall) Emit(ev Event) {
	if c.emit != nil {
		c.emit(ev)
	}
}

// Streaming reports whether the run streams events.
func (c *RunCall) Streaming() bool { return c.emit != nil }

// execute runs the run stage; every mode goes through it.
func (r *Runner) execute(ctx context.Context, agent *Agent, run *state.Run, input []state.Item, resume bool, emit func(Event)) (*Result, error) {
	since := run.NextSeq()
	f := new(runFrame)
	f.call = RunCall{Run: run, Agent: agent, Input: input, Resumed: resume, emit: emit, frame: f}
	res, err := r.run.ServeRun(ctx, &f.call)
	if res == nil {
		res = &Result{run: run, lastAgent: agent, since: since}
	}
	res.ended, res.items = true, res.run.Items()
	if err != nil {
		err = newRunError(res, err)
	}
	return res, err
}

// coreRun is the innermost run handler: the loop of turns.
func (r *Runner) coreRun(ctx context.Context, c *RunCall) (*Result, error) {
	run := c.Run
	// One Turn serves every turn of the run, cleared for each: a Turn is
	// valid only while the chain serves it (see [Turn]), and a turn of ~900
	// bytes made afresh each time was a third of the bytes a turn
	// allocated. It and the result come with the call (runFrame), and the
	// Turn lets go of the last turn's values when the loop returns: the
	// result keeps it.
	res, t := c.frame.take()
	defer t.reset()
	*res = Result{run: run, lastAgent: c.Agent, since: run.NextSeq()}
	placed, err := placeInput(c, res)
	if err != nil {
		return res, err
	}
	maxTurns := run.MaxTurns()
	if maxTurns <= 0 {
		maxTurns = r.cfg.maxTurns
	}
	resumed := c.Resumed && hasOpenCalls(run)
	cur := agentOf(c.Agent)
	spent := r.cfg.budget.newSpend(run)
	var ok bool
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		var n int
		if resumed {
			n = run.Turn()
		} else if n, ok = runcore.NextTurn(run, maxTurns); !ok {
			return r.maxTurnsReached(ctx, run, res, maxTurns)
		}
		t.reset()
		t.Run, t.Agent, t.Number, t.Resumed, t.Input = run, cur.agent, n, resumed, placed
		t.emit, t.runner, t.res, t.tools, t.conds, t.spent = c.emit, r, res, cur.tools, cur.conds, spent
		placed, resumed = nil, false
		if err := r.serveTurn(ctx, t, res); err != nil {
			return res, err
		}
		if done, err := takeStep(t, res, &cur); done || err != nil {
			return res, err
		}
	}
}

// placeInput checks that the run can go on and, unless it resumes, places the
// run's input and records it in res. It returns the placed items, the
// first turn's input.
func placeInput(c *RunCall, res *Result) ([]state.Item, error) {
	run := c.Run
	if sid, n, pending, _ := run.HistoryRef(); pending {
		// A checkpoint that refers to its session history, which nothing
		// read: the model would see another input.
		return nil, &state.HistoryError{RunID: run.ID(), SessionID: sid, Count: n,
			Reason: "not read from the session before the run went on (resume it with the persistence middleware over its session store)",
			Err:    state.ErrHistoryPending}
	}
	if c.Resumed {
		res.since = resumedSince(run, res.since)
		return nil, nil
	}
	placed := runcore.AddInput(run, c.Input...) // at res.since on: among its new items
	if c.emit != nil {
		for _, it := range placed {
			c.emit(ItemCreated{Item: it})
		}
	}
	return placed, nil
}

// resumedSince returns where the new items of a resume of run begin: the
// first output position of the paused response when every position from
// there to next (the run's next free position) is still free, the common
// pause; else next. Then the outputs the resume gives the paused calls
// are among the items it reads from the run (see [Result]), not copies in
// a list of their own (an allocation a resume).
func resumedSince(run *state.Run, next int64) int64 {
	b := run.Response()
	if b.End <= 0 || b.OutputsEnd != next {
		return next
	}
	for seq := b.End; seq < next; seq++ {
		if _, taken := run.ItemAt(seq); taken {
			return next
		}
	}
	return b.End
}

// currentAgent is the agent whose turns the run takes, with what its turns
// read of it, found once per agent.
type currentAgent struct {
	agent *Agent
	tools []ToolSpec
	conds []toolCondition
}

// agentOf returns a as the current agent.
func agentOf(a *Agent) currentAgent {
	return currentAgent{agent: a, tools: toolSpecs(a), conds: conditionsOf(a)}
}

// serveTurn serves turn t through the turn stage, between its
// TurnStarted and TurnEnded events, and records in res the response it
// got and an output error it failed with.
func (r *Runner) serveTurn(ctx context.Context, t *Turn, res *Result) error {
	if t.emit != nil {
		t.Emit(TurnStarted{Turn: t.Number, Agent: t.Agent.Name, Resumed: t.Resumed})
	}
	err := r.turn.ServeTurn(ctx, t)
	if t.Response != nil && t.Response.ID != "" {
		res.lastResponseID = t.Response.ID
	}
	if err != nil {
		res.noteOutputErr(err)
		return err
	}
	if t.emit != nil {
		t.Emit(TurnEnded{Turn: t.Number, Next: t.Next.Kind})
	}
	return nil
}

// takeStep takes the step turn t chose: it finishes the run, pauses it for
// approvals, or hands off to cur's next agent. It reports whether the run
// is done (for now), and fails on a step it cannot take.
func takeStep(t *Turn, res *Result, cur *currentAgent) (done bool, err error) {
	run, n := t.Run, t.Number
	switch t.Next.Kind {
	case NextFinalOutput:
		if err := res.setOutput(cur.agent, t.Next.Output, t.Next.Value); err != nil {
			res.outputErr = err
			return true, err
		}
		runcore.Finish(run, t.Next.Output)
		return true, nil
	case NextRunAgain:
		return false, nil
	case NextHandoff:
		to := t.Next.Agent
		if to == nil {
			return true, fmt.Errorf("pipeline: turn %d: handoff without a target agent", n)
		}
		if t.emit != nil {
			t.Emit(AgentChanged{From: cur.agent.Name, To: to.Name})
		}
		runcore.SetAgent(run, to.Name)
		*cur = agentOf(to)
		res.lastAgent = to
		return false, nil
	case NextInterruption:
		res.interruptions = runcore.PendingView(run) // copy-on-write: Interruptions hands out copies
		return true, nil
	default:
		return true, fmt.Errorf("pipeline: turn %d: the turn handler returned nil without a next step", n)
	}
}

func (r *Runner) maxTurnsReached(ctx context.Context, run *state.Run, res *Result, maxTurns int) (*Result, error) {
	err := &MaxTurnsError{MaxTurns: maxTurns}
	if r.cfg.onMaxTurns == nil {
		return res, err
	}
	final, ok, herr := r.cfg.onMaxTurns(ctx, run, err)
	if herr != nil {
		return res, herr
	}
	if !ok {
		return res, err
	}
	if err := res.setOutput(res.lastAgent, final, nil); err != nil {
		res.outputErr = err
		return res, err
	}
	runcore.Finish(run, final)
	return res, nil
}

// hasOpenCalls reports whether the run's current response has calls
// without outputs: it paused, or stopped before its tools ran.
func hasOpenCalls(run *state.Run) bool {
	b := run.Response()
	outSeq := b.End
	for seq := b.Start; seq < b.End; seq++ {
		it, ok := run.ItemAt(seq)
		if !ok || !it.Kind().IsCall() {
			continue
		}
		if _, done := answered(run, it.CallID(), outSeq); !done {
			return true
		}
		outSeq++
	}
	return false
}

// answered returns the output of the call callID at its reserved position
// outSeq, if it has one. It looks at the position, not only the call ID: a
// model may reuse a call ID in a later response (several scripted or
// OpenAI-compatible models number calls per response), and an earlier
// call's output must not answer a later call.
func answered(run *state.Run, callID string, outSeq int64) (state.Item, bool) {
	it, ok := run.ItemAt(outSeq)
	if !ok || !it.Kind().IsOutput() || it.CallID() != callID {
		return state.Item{}, false
	}
	return it, true
}

func coreModel(ctx context.Context, c *ModelCall) (*ModelResponse, error) {
	if c.Model() == nil {
		return nil, fmt.Errorf("pipeline: agent %q has no model", c.Agent.Name)
	}
	return c.respond(ctx)
}

func (r *Runner) coreTool(ctx context.Context, c *ToolCall) (*ToolResult, error) {
	var (
		out   string
		parts []state.ContentPart
		err   error
	)
	if d := r.toolTimeout(c); d > 0 {
		out, parts, err = callWithTimeout(ctx, c, d)
	} else {
		out, parts, err = invokeTool(ctx, c)
	}
	if err == nil {
		if c.own == nil {
			return &ToolResult{Status: ToolCompleted, Output: out, Content: parts}, nil
		}
		c.own.result = ToolResult{Status: ToolCompleted, Output: out, Content: parts} // in the call: see ToolHandler
		return &c.own.result, nil
	}
	if errors.Is(err, ErrToolPending) {
		res := c.Pending()
		if ee, ok := errors.AsType[*ElicitationError](err); ok {
			res.Elicitation = ee.Elicitation
		}
		return res, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return nil, err
	}
	if shared, ok := errors.AsType[*ArgumentError](err); ok {
		// The tool may return one error value from many calls at once:
		// fill in the call on a copy, never on the tool's value.
		ae := new(*shared)
		if ae.Tool == "" {
			ae.Tool = c.Name
		}
		if ae.CallID == "" {
			ae.CallID = c.CallID
		}
		if !r.cfg.reportInvalid {
			return nil, ae
		}
		return &ToolResult{Status: ToolCompleted, Output: ae.Error(), Err: ae}, nil
	}
	if r.cfg.abortOnToolErr || (r.cfg.abortOnTimeout && errors.Is(err, ErrToolTimeout)) {
		return nil, &ToolError{Tool: c.Name, CallID: c.CallID, Err: err}
	}
	return &ToolResult{Status: ToolCompleted, Output: r.cfg.toolErrorText(c, err), Err: err}, nil
}

// The core checks t.emit before each Emit: boxing an event in an interface
// allocates, and a run that does not stream must not pay for it.

// coreTurn is the innermost turn handler: the model stage, the placing of
// the response, the tool stage, and the decision.
func (r *Runner) coreTurn(ctx context.Context, t *Turn) error {
	var err error
	applyConditions(ctx, t)
	if t.Resumed {
		t.Response, t.bound = pausedResponse(t.Run)
	} else if t.Response, err = r.callModel(ctx, t); err != nil {
		return err
	} else if b := r.cfg.budget; b != nil && hasOpenCalls(t.Run) {
		if err := b.reached(t.Run, t.spent); err != nil {
			return err // the calls stay open: resuming the run runs them
		}
	}
	return r.runCalls(ctx, t)
}

func (r *Runner) callModel(ctx context.Context, t *Turn) (*ModelResponse, error) {
	a := t.Agent
	if b := r.cfg.budget; b != nil {
		if err := b.reached(t.Run, t.spent); err != nil {
			return nil, err
		}
	}
	instructions := a.Instructions
	if a.InstructionsFunc != nil {
		var err error
		if instructions, err = a.InstructionsFunc(ctx, t); err != nil {
			return nil, fmt.Errorf("pipeline: agent %q instructions: %w", a.Name, err)
		}
	}
	c := &t.model                                                 // the turn's one model call, in the turn: no allocation of its own
	input, view, hasView := runcore.ModelInputAnd(t.Run, ViewKey) // one lock for both
	setModelCall(c, t, instructions, input)
	r.resetToolChoice(t, c)
	if hasView {
		if err := applyView(c, view); err != nil {
			return nil, err
		}
	}
	resp, err := r.model.Respond(ctx, c)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("pipeline: agent %q: model stage returned no response and no error", a.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err // a cancelled run records no model output
	}
	u := resp.Usage
	if u.Requests == 0 {
		u.Requests = 1
	}
	var priceErr error
	if b := r.cfg.budget; b != nil {
		priceErr = b.charge(t.Run, t.spent, c.Settings.Model, resp)
	}

	// The runner owns the response the model stage returned (see
	// [Model]): its items are placed in place, with the usage and the
	// model call recorded under the same lock (the usage even if placing
	// fails, and before any append).
	ncalls := markHandoffs(a, resp.Items, t.disabled)
	bound, err := runcore.PlaceModelResponse(t.Run, resp.Items, ncalls, u,
		state.ModelCall{Turn: t.Number, Agent: a.Name, Model: c.Settings.Model, ResponseID: resp.ID, Usage: u})
	if err != nil {
		return nil, err
	}
	t.bound = bound
	r.noteToolChoice(t, c, resp) // the items are at fresh positions: among the result's new items
	if t.emit != nil {
		for _, it := range resp.Items {
			t.Emit(ItemCreated{Item: it})
		}
	}
	return resp, priceErr // the response is recorded either way
}

// newModelCall returns the model call of turn t with the given
// instructions: the run's model input, the agent's tools (built once per
// agent per run when the runner made t), settings and output type.
func newModelCall(t *Turn, instructions string) *ModelCall {
	c := new(ModelCall)
	setModelCall(c, t, instructions, t.Run.ModelInput())
	return c
}

// setModelCall makes *c the model call of turn t (see newModelCall), with
// input, the run's model input.
func setModelCall(c *ModelCall, t *Turn, instructions string, input state.Items) {
	a := t.Agent
	tools := t.tools
	if tools == nil {
		tools = toolSpecs(a)
	}
	*c = ModelCall{
		Turn: t, Agent: a, Instructions: instructions, Input: input,
		Tools: tools, Settings: a.Settings, Output: outputSpec(a), Stream: t.emit != nil, emit: t.emit,
	}
}

// placeResponse is the one way the core places a model response in run:
// its items at the next positions in model order, calls to a's handoffs
// re-kinded as handoff calls, then one reserved position per call for its
// output, in call order; the run's response boundary spans both. items are
// changed in place to carry their kinds and positions. A call to a
// disabled handoff stays a tool call, which the turn answers with a
// *ToolDisabledError.
func placeResponse(run *state.Run, a *Agent, items []state.Item, disabled []string) (state.Boundary, error) {
	return runcore.Place(run, items, markHandoffs(a, items, disabled))
}

// markHandoffs re-kinds the calls of items to a's enabled handoffs as
// handoff calls, in place, and returns how many calls items hold.
func markHandoffs(a *Agent, items []state.Item, disabled []string) int {
	ncalls := 0
	for i, it := range items {
		if !it.Kind().IsCall() {
			continue
		}
		ncalls++
		if a.handoff(it.Name()) != nil && !slices.Contains(disabled, it.Name()) {
			items[i], _ = it.WithKind(state.KindHandoffCall)
		}
	}
	return ncalls
}

// toolSpecs returns the function tools an agent offers, handoffs included.
// The runner builds them once per agent per run; model calls share them.
func toolSpecs(a *Agent) []ToolSpec {
	tools := make([]ToolSpec, 0, len(a.Tools)+len(a.Handoffs))
	for _, tl := range a.Tools {
		tools = append(tools, tl.Spec())
	}
	for i := range a.Handoffs {
		tools = append(tools, a.Handoffs[i].spec())
	}
	return tools
}

// pausedResponse rebuilds the current response from the run, by position,
// and returns it with its boundary. A response of one item, a lone call
// (the common pause), is made with its item in one allocation.
func pausedResponse(run *state.Run) (*ModelResponse, state.Boundary) {
	b := run.Response()
	var resp *ModelResponse
	if n := b.End - b.Start; n <= 1 {
		p := new(pausedOne)
		p.resp.Items = p.items[:0]
		resp = &p.resp
	} else {
		resp = &ModelResponse{Items: make([]state.Item, 0, n)}
	}
	for seq := b.Start; seq < b.End; seq++ {
		if it, ok := run.ItemAt(seq); ok {
			resp.Items = append(resp.Items, it)
		}
	}
	return resp, b
}

// A pausedOne is a rebuilt paused response of one item with room for it.
type pausedOne struct {
	resp  ModelResponse
	items [1]state.Item
}

// A handoffCall is a handoff call of a turn's response.
type handoffCall struct {
	item   state.Item
	outSeq int64
	done   bool // its output is recorded
}

// layoutCalls sets the turn's calls from its placed response, in call
// order, with their reserved output positions and an empty result slot
// each, and what [Turn.MayEndRun] reports. It returns the response's
// handoff calls (not among t.Calls) and its last assistant message, if it
// has one. It is the one place that says which calls a response makes.
func layoutCalls(t *Turn) (handoffs []handoffCall, hasMessage bool, final string) {
	a := t.Agent
	outSeq := t.bound.End // the response's placement: its outputs' positions follow it
	for _, it := range t.Response.Items {
		switch it.Kind() {
		case state.KindAssistantMessage:
			hasMessage, final = true, it.Text()
			continue
		case state.KindToolCall, state.KindHandoffCall, state.KindCustomCall, state.KindMCPApprovalRequest:
		default:
			continue
		}
		if it.Kind() == state.KindHandoffCall {
			handoffs = append(handoffs, handoffCall{item: it, outSeq: outSeq})
			outSeq++
			continue
		}
		var c *ToolCall
		var own *callState
		if cap(t.Calls) == 0 { // the first: in the turn itself
			c, own, t.Calls, t.Results = &t.call0, &t.own0, t.calls1[:0], t.result1[:0]
		} else {
			cc := new(coreCall)
			c, own = &cc.call, &cc.own
		}
		*own = callState{}
		*c = ToolCall{
			Turn: t, Tool: t.tool(it.Name()), Item: it, Name: it.Name(), CallID: it.CallID(),
			Arguments: it.Text(), Index: len(t.Calls), OutputSeq: outSeq,
			Terminal: a.ToolUse.MayEnd(it.Name()), Resumed: t.Resumed, own: own,
		}
		t.Calls = append(t.Calls, c)
		t.Results = append(t.Results, nil)
		outSeq++
	}
	t.ends = len(t.Calls) == 0 && len(handoffs) == 0 && hasMessage
	for _, c := range t.Calls {
		t.ends = t.ends || c.Terminal
	}
	return handoffs, hasMessage, final
}

// runCalls runs the response's calls and decides the next step.
func (r *Runner) runCalls(ctx context.Context, t *Turn) error {
	a, run := t.Agent, t.Run
	handoffs, hasMessage, final := layoutCalls(t) // in call order; the first handoff is taken
	// Only a resumed turn's calls can have outputs already: a fresh turn's
	// output positions were reserved when its response was placed, just
	// before, and nothing records at them until its calls run. So a fresh
	// turn asks the run nothing here (a lock and a lookup per call).
	if t.Resumed {
		for i, h := range handoffs {
			_, handoffs[i].done = answered(run, h.item.CallID(), h.outSeq)
		}
	}
	// The first handoff is checked before anything of the turn runs: its
	// arguments, and the message beside it (see Handoff). Decoding is
	// deterministic, so a resumed turn reaches the same verdict.
	var hand handoffStep
	if len(handoffs) > 0 {
		first := handoffs[0]
		to := a.handoff(first.item.Name())
		hc, err := checkHandoff(t, to, first.item, hasMessage, final)
		switch {
		case err == nil:
			hand = handoffStep{to: to, call: hc, call0: first}
		case !r.cfg.reportInvalid:
			return err
		default:
			hand.refused = err
		}
	}
	var toRun []int // indexes into t.Calls of calls that run now
	for _, c := range t.Calls {
		if t.Resumed {
			if out, done := answered(run, c.CallID, c.OutputSeq); done {
				t.Results[c.Index] = &ToolResult{Status: ToolCompleted, Output: out.Text(), Content: out.Content()}
				c.own.answered = true
				continue
			}
		}
		if res, err := r.checkCall(c); err != nil {
			return err
		} else if res != nil {
			t.Results[c.Index] = res
			continue
		}
		toRun = append(toRun, c.Index)
	}

	runErr := r.runTools(ctx, t, toRun)
	if err := r.recordResults(t); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return runErr
	}

	for i, h := range handoffs {
		if h.done || (i == 0 && hand.to != nil) {
			continue // the handoff taken is answered as it is taken
		}
		out := "Multiple handoffs detected, ignoring this one."
		if i == 0 {
			out = hand.refused.Error()
		}
		if err := recordHandoffOutput(t, h, out); err != nil {
			return err
		}
	}
	return r.decide(ctx, t, hasMessage, final, hand)
}

// A handoffStep is the handoff a turn takes (to set), or the reason its
// handoff call was refused (refused set).
type handoffStep struct {
	to      *Handoff
	call    *HandoffCall
	call0   handoffCall // the call, its output position, whether answered
	refused error
}

// recordHandoffOutput records the output of handoff call h.
func recordHandoffOutput(t *Turn, h handoffCall, out string) error {
	item, _ := state.ToolOutput(h.item.CallID(), h.item.Name(), out).WithKind(state.KindHandoffOutput)
	item = item.WithSeq(h.outSeq)
	if err := runcore.Record(t.Run, item); err != nil {
		return err
	}
	t.record(item)
	if t.emit != nil {
		t.Emit(ItemCreated{Item: item})
	}
	return nil
}

// checkCall answers a call that cannot run: an unknown tool or arguments
// that are not JSON. It returns a result to report to the model, or an
// error to end the run, or neither if the call can run.
func (r *Runner) checkCall(c *ToolCall) (*ToolResult, error) {
	if res := checkDisabled(c); res != nil {
		return res, nil
	}
	var err error
	switch {
	case c.Tool == nil:
		err = &UnknownToolError{Agent: c.Turn.Agent.Name, Tool: c.Name, CallID: c.CallID}
	case c.Item.Kind() == state.KindToolCall && c.Arguments != "" && !json.Valid([]byte(c.Arguments)):
		ae := &ArgumentError{Tool: c.Name, CallID: c.CallID, Err: errors.New("malformed JSON")}
		var v any
		if serr, ok := errors.AsType[*json.SyntaxError](json.Unmarshal([]byte(c.Arguments), &v)); ok {
			ae.Offset, ae.Err = serr.Offset, serr
		}
		err = ae
	default:
		return nil, nil
	}
	if !r.cfg.reportInvalid {
		return nil, err
	}
	return &ToolResult{Status: ToolCompleted, Output: err.Error(), Err: err}, nil
}

// runTools runs the given calls through the tool stage, concurrently up to
// the configured bound, each writing only its own result slot. The first
// error (in call order, a cause before the cancellations it caused) cancels
// the others; runTools returns after every call returned.
func (r *Runner) runTools(ctx context.Context, t *Turn, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	if len(idx) == 1 {
		return r.callTool(ctx, t, idx[0])
	}
	// A context of its own, not ctx reassigned: the goroutines capture it,
	// and a captured parameter would be moved to the heap on every call,
	// the one-call path above included.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(idx))
	sem := make(chan struct{}, r.cfg.toolConcurrency)
	var wg sync.WaitGroup
	for k, i := range idx {
		select {
		case sem <- struct{}{}:
		case <-cctx.Done():
			errs[k] = cctx.Err()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := r.callTool(cctx, t, i); err != nil {
				errs[k] = err
				cancel()
			}
		})
	}
	wg.Wait()
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if first == nil || (errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	return first
}

// callTool runs call i of the turn through the tool stage and keeps its
// result in the call's own slot.
//
// A streaming run hears of the call as it starts and as it returns, from
// the goroutine that runs it.
func (r *Runner) callTool(ctx context.Context, t *Turn, i int) error {
	c := t.Calls[i]
	var start time.Time
	if t.emit != nil {
		start = time.Now()
		t.Emit(ToolCallStarted{Turn: t.Number, Tool: c.Name, CallID: c.CallID, Arguments: c.Arguments})
	}
	res, err := r.tool.CallTool(ctx, c)
	if err == nil && (res == nil || res.Status == 0) {
		err = fmt.Errorf("pipeline: tool %q call %s: tool stage returned no result and no error", c.Name, c.CallID)
	}
	if t.emit != nil {
		t.Emit(toolCallEnded(t, c, res, err, time.Since(start)))
	}
	if err != nil {
		return err
	}
	t.Results[i] = res
	return nil
}

// toolCallEnded returns the ToolCallEnded event of call c.
func toolCallEnded(t *Turn, c *ToolCall, res *ToolResult, err error, d time.Duration) ToolCallEnded {
	ev := ToolCallEnded{Turn: t.Number, Tool: c.Name, CallID: c.CallID, Err: err, Duration: d}
	if err != nil {
		return ev
	}
	ev.Status, ev.Err = res.Status, res.Err
	if res.Status == ToolCompleted || res.Status == ToolRejected {
		ev.Output = c.resultOutput(res)
	}
	return ev
}

// recordResults records the outputs of the calls that have one, in call
// order, and the calls that wait for a decision as pending.
func (r *Runner) recordResults(t *Turn) error {
	for i, c := range t.Calls {
		res := t.Results[i]
		if res == nil || c.own.answered {
			continue
		}
		switch res.Status {
		case ToolCompleted, ToolRejected:
			// Unless the stage recorded an output for it meanwhile.
			out := c.ResultItem(res)
			if recorded, err := runcore.RecordOutput(t.Run, out); err != nil {
				return err
			} else if !recorded {
				continue
			}
			t.record(out)
			if t.emit != nil {
				t.Emit(ItemCreated{Item: out})
			}
		case ToolPending:
			if _, done := answered(t.Run, c.CallID, c.OutputSeq); done {
				continue
			}
			a := state.Approval{
				Tool: c.Name, CallID: c.CallID, Arguments: c.Arguments, Agent: t.Agent.Name,
				Seq: c.Item.Seq(), OutputSeq: c.OutputSeq, Elicitation: res.Elicitation,
			}
			// A call whose nested run paused (an agent used as a tool) is
			// represented by the nested run's approvals, recorded with an
			// Owner, not by an approval of its own. A call that waits for
			// an answer replaces what it waited for before (an approval
			// since given, or an answered request).
			if a.IsElicitation() || !t.Run.IsPending(c.CallID) && len(t.Run.PendingOwnedBy(c.CallID)) == 0 {
				runcore.AddPending(t.Run, a)
			}
			if t.emit != nil {
				t.Emit(ApprovalRequested{Approval: a})
			}
		}
	}
	return nil
}

// decide sets the turn's next step.
func (r *Runner) decide(ctx context.Context, t *Turn, hasMessage bool, final string, hand handoffStep) error {
	for _, res := range t.Results {
		if res != nil && res.Status == ToolPending {
			t.Next = NextStep{Kind: NextInterruption}
			return nil
		}
	}
	if hand.to != nil {
		if err := r.takeHandoff(ctx, t, hand, hasMessage, final); err != nil {
			return err
		}
		t.Next = NextStep{Kind: NextHandoff, Agent: hand.to.Agent}
		return nil
	}
	if hand.refused != nil {
		// The model was told why its handoff was refused, and answers
		// again; its message beside the call is not a final output.
		t.Next = NextStep{Kind: NextRunAgain}
		return nil
	}
	if len(t.Calls) == 0 {
		if hasMessage {
			return setFinal(t, final, true)
		}
		t.Next = NextStep{Kind: NextRunAgain}
		return nil
	}
	out, done, err := t.Agent.ToolUse.decideFinal(ctx, t)
	if err != nil {
		return fmt.Errorf("pipeline: agent %q tool use decision: %w", t.Agent.Name, err)
	}
	if done {
		return setFinal(t, out, false)
	}
	t.Next = NextStep{Kind: NextRunAgain}
	return nil
}

func (r *Runner) handoff(ctx context.Context, t *Turn, h *Handoff) error {
	if h.Agent == nil {
		return fmt.Errorf("pipeline: agent %q has a handoff without an agent", t.Agent.Name)
	}
	if h.InputFilter == nil {
		return nil
	}
	items, err := h.InputFilter(ctx, HandoffInput{From: t.Agent, To: h.Agent, History: t.Run.ModelInput()})
	if err != nil {
		return fmt.Errorf("pipeline: handoff %s → %s input filter: %w", t.Agent.Name, h.Agent.Name, err)
	}
	runcore.ReplaceContext(t.Run, items)
	return nil
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
