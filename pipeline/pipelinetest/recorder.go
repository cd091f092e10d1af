package pipelinetest

import (
	"context"
	"slices"
	"sync"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A Recorder is a terminal [pipeline.RunHandler], [pipeline.Handler],
// [pipeline.Model] and [pipeline.ToolHandler]: it records what it
// received and answers with the fixed values in its fields. Set the fields before first use and do
// not change them afterwards; the methods are safe for concurrent use. The
// zero Recorder is ready to use.
//
// Records are plain copies, taken while the stage served: they stay valid
// after the turn is gone, and changing them changes nothing.
type Recorder struct {
	// Next is the step ServeTurn sets on the turn, and how ServeRun ends
	// the run. The zero value is a final output of "".
	Next pipeline.NextStep
	// Response is what Respond answers, copied per call. Nil answers one
	// assistant message, "ok".
	Response *pipeline.ModelResponse
	// Result is what CallTool answers, copied per call. Nil answers a
	// completed call with output "ok".
	Result *pipeline.ToolResult
	// Err, if set, is what every stage returns instead.
	Err error

	mu     sync.Mutex
	runs   []RunRecord
	turns  []TurnRecord
	models []ModelRecord
	tools  []ToolRecord
}

// A RunRecord is what [Recorder.ServeRun] saw of a run.
type RunRecord struct {
	RunID   string
	Agent   string
	Resumed bool
	// Input is the run's input, nil on resume.
	Input []state.Item
	// Streaming reports whether the run had an event sink.
	Streaming bool
	// Canceled reports whether the context was done when the run arrived.
	Canceled bool
}

// A TurnRecord is what [Recorder.ServeTurn] saw of a turn.
type TurnRecord struct {
	RunID   string
	Agent   string
	Number  int
	Resumed bool
	Input   []state.Item
	// Streaming reports whether the turn had an event sink.
	Streaming bool
	// Canceled reports whether the context was done when the turn arrived.
	Canceled bool
}

// A ModelRecord is what [Recorder.Respond] saw of a model call.
type ModelRecord struct {
	Agent        string
	Instructions string
	Input        []state.Item
	Tools        []string
	Stream       bool
	Canceled     bool
}

// A ToolRecord is what [Recorder.CallTool] saw of a tool call.
type ToolRecord struct {
	Name      string
	CallID    string
	Arguments string
	Index     int
	OutputSeq int64
	Terminal  bool
	Resumed   bool
	Canceled  bool
}

var (
	_ pipeline.RunHandler  = (*Recorder)(nil)
	_ pipeline.Handler     = (*Recorder)(nil)
	_ pipeline.Model       = (*Recorder)(nil)
	_ pipeline.ToolHandler = (*Recorder)(nil)
)

// ServeRun records c and ends the run as r.Next says, as the core ends
// one: a final output (the zero Next included) finishes c.Run with it and
// is the result's FinalOutput; an interruption makes the run's pending
// approvals the result's Interruptions; any other step leaves the run as
// it is. It serves no turns. The result is that of c.Run, served last by
// c.Agent, and is returned with r.Err too, as a run handler's is.
func (r *Recorder) ServeRun(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
	rec := RunRecord{Resumed: c.Resumed, Input: slices.Clone(c.Input), Streaming: c.Streaming(), Canceled: ctx.Err() != nil}
	if c.Run != nil {
		rec.RunID = c.Run.ID()
	}
	if c.Agent != nil {
		rec.Agent = c.Agent.Name
	}
	r.mu.Lock()
	r.runs = append(r.runs, rec)
	r.mu.Unlock()
	if r.Err != nil {
		return core.NewResult(c.Run, c.Agent), r.Err
	}
	if c.Run != nil && (r.Next.Kind == 0 || r.Next.Kind == pipeline.NextFinalOutput) {
		runcore.Finish(c.Run, r.Next.Output)
	}
	res := core.NewResult(c.Run, c.Agent)
	return res, nil
}

// ServeTurn records t and sets t.Next to r.Next (or a final output of "").
func (r *Recorder) ServeTurn(ctx context.Context, t *pipeline.Turn) error {
	rec := TurnRecord{
		Number: t.Number, Resumed: t.Resumed, Input: slices.Clone(t.Input),
		Streaming: t.Streaming(), Canceled: ctx.Err() != nil,
	}
	if t.Run != nil {
		rec.RunID = t.Run.ID()
	}
	if t.Agent != nil {
		rec.Agent = t.Agent.Name
	}
	r.mu.Lock()
	r.turns = append(r.turns, rec)
	r.mu.Unlock()
	if r.Err != nil {
		return r.Err
	}
	t.Next = r.Next
	if t.Next.Kind == 0 {
		t.Next = pipeline.NextStep{Kind: pipeline.NextFinalOutput}
	}
	return nil
}

// Respond records c and answers with a copy of r.Response.
func (r *Recorder) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	rec := ModelRecord{
		Instructions: c.Instructions, Input: c.Input.Slice(), Stream: c.Stream, Canceled: ctx.Err() != nil,
	}
	if c.Agent != nil {
		rec.Agent = c.Agent.Name
	}
	for _, s := range c.Tools {
		rec.Tools = append(rec.Tools, s.Name)
	}
	r.mu.Lock()
	r.models = append(r.models, rec)
	r.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	if r.Response == nil {
		return &pipeline.ModelResponse{ID: "resp_rec", Model: "recorder", Items: []state.Item{state.AssistantMessage("msg_rec", "ok")}}, nil
	}
	resp := *r.Response
	resp.Items = slices.Clone(resp.Items)
	return &resp, nil
}

// CallTool records c and answers with a copy of r.Result.
func (r *Recorder) CallTool(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
	rec := ToolRecord{
		Name: c.Name, CallID: c.CallID, Arguments: c.Arguments, Index: c.Index, OutputSeq: c.OutputSeq,
		Terminal: c.Terminal, Resumed: c.Resumed, Canceled: ctx.Err() != nil,
	}
	r.mu.Lock()
	r.tools = append(r.tools, rec)
	r.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	if r.Result == nil {
		return &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "ok"}, nil
	}
	res := *r.Result
	return &res, nil
}

// Runs returns a copy of the run records, in arrival order.
func (r *Recorder) Runs() []RunRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.runs)
	for i := range out {
		out[i].Input = slices.Clone(out[i].Input)
	}
	return out
}

// Turns returns a copy of the turn records, in arrival order.
func (r *Recorder) Turns() []TurnRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.turns)
	for i := range out {
		out[i].Input = slices.Clone(out[i].Input)
	}
	return out
}

// ModelCalls returns a copy of the model call records, in arrival order.
func (r *Recorder) ModelCalls() []ModelRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.models)
	for i := range out {
		out[i].Input = slices.Clone(out[i].Input)
		out[i].Tools = slices.Clone(out[i].Tools)
	}
	return out
}

// ToolCalls returns a copy of the tool call records, in arrival order
// (which, for parallel calls, is not call order: sort by Index for that).
func (r *Recorder) ToolCalls() []ToolRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.tools)
}

// Stages are the handlers of every stage with a middleware around a
// terminal handler, as [Wrap] builds them.
type Stages struct {
	Run   pipeline.RunHandler
	Turn  pipeline.Handler
	Model pipeline.Model
	Tool  pipeline.ToolHandler
}

// Wrap builds mw's stages around rec, once, as the runner would: a nil
// stage of mw leaves rec itself. Each stage is built on its own, so the Run
// stage's next is rec, not the turn loop: serve its [pipeline.RunCall]s
// (see [NewRunCall]) to test what a run middleware does around a run, and
// use a [pipeline.Runner] to test it around the turns too.
func Wrap(mw pipeline.Middleware, rec *Recorder) Stages {
	s := Stages{Run: rec, Turn: rec, Model: rec, Tool: rec}
	if mw.Run != nil {
		s.Run = mw.Run(rec)
	}
	if mw.Turn != nil {
		s.Turn = mw.Turn(rec)
	}
	if mw.Model != nil {
		s.Model = mw.Model(rec)
	}
	if mw.Tool != nil {
		s.Tool = mw.Tool(rec)
	}
	return s
}

// An EventLog collects the events of a streaming turn built with
// [WithEvents]. It is safe for concurrent use; Events returns a copy.
type EventLog struct {
	mu     sync.Mutex
	events []pipeline.Event
}

// Emit appends ev to the log.
func (l *EventLog) Emit(ev pipeline.Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

// Events returns a copy of the events emitted so far, in order.
func (l *EventLog) Events() []pipeline.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}
