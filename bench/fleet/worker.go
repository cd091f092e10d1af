package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// ToolName is the name of the tool every scripted turn calls.
const ToolName = "lookup"

// process is one worker process of a simulation: the runner with the
// crash-safe chain over the backend's store, and the sessions it serves.
type process struct {
	cfg    Config
	index  int
	store  Store
	count  *counters
	cp     *checkpoint.Checkpointer
	runner *pipeline.Runner
	agent  *pipeline.Agent

	// The measurement window: turns and runs that end in it count.
	from, to time.Time

	mu        sync.Mutex
	latencies []int64 // µs, turns that ended in the window
	turns     atomic.Int64
	runs      atomic.Int64
	allTurns  atomic.Int64
	conflicts atomic.Int64
	retried   atomic.Int64
	failures  atomic.Int64
	firstErrs []string
}

func newProcess(cfg Config, index int, store Store, c *counters) *process {
	p := &process{cfg: cfg, index: index, store: store, count: c}
	p.cp = checkpoint.New(store, checkpoint.WithSession(store, persistence.WithLimit(cfg.HistoryLimit)))
	p.runner = pipeline.NewRunner(
		pipeline.WithMaxTurns(cfg.ToolTurns+5),
		pipeline.WithMiddleware(
			p.cp.Middleware(),
		))
	tool := pipeline.NewTool(pipeline.ToolSpec{Name: ToolName, Description: "Looks something up."},
		func(context.Context, json.RawMessage) (string, error) { return text(cfg.OutputBytes), nil })
	p.agent = &pipeline.Agent{Name: "fleet", Instructions: "Answer with the tool's help.", Tools: []pipeline.Tool{tool}}
	return p
}

// text returns n bytes of random words (lowercase letters and spaces), a
// new text each call, so that the stores' compression (PostgreSQL's TOAST)
// finds no repeats that real outputs would not have.
func text(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		if r := rand.Uint32(); r%7 == 0 {
			b[i] = ' '
		} else {
			b[i] = letters[r%uint32(len(letters))]
		}
	}
	return string(b)
}

// args returns a tool call's arguments of about n bytes.
func args(n int) string {
	return `{"q":"` + text(max(n-8, 1)) + `"}`
}

// sessionID and runID name the simulation's sessions and runs.
func (p *process) sessionID(s int) string { return fmt.Sprintf("fleet-s%05d", s) }
func (p *process) runID(s, k int) string  { return fmt.Sprintf(runIDFormat, s, k) }

// runIDFormat makes run k of session s's run ID.
const runIDFormat = "fleet-s%05d-r%06d"

// serve runs the sessions of this process (those whose number is its
// index modulo the processes), each in a loop of runs, until stop is
// closed; then it lets every run in progress end.
func (p *process) serve(ctx context.Context, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for s := p.index; s < p.cfg.Sessions; s += p.cfg.Processes {
		wg.Go(func() {
			// Spread the sessions' first calls over one model latency.
			jitter := time.Duration(rand.Int64N(int64(p.cfg.ModelLatency) + 1))
			select {
			case <-time.After(jitter):
			case <-stop:
				return
			}
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				p.run(ctx, s, k)
			}
		})
	}
	wg.Wait()
}

// run runs run k of session s: ToolTurns tool turns, then a final
// message. A typed conflict is counted and the run resumed from its
// checkpoint; any other error is a failure.
func (p *process) run(ctx context.Context, s, k int) {
	var marks []time.Time // the start of each model call, then the end
	model := pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		marks = append(marks, time.Now())
		return p.answer(ctx, c, len(marks)) // calls of this invocation; a resume goes on from the checkpoint
	})
	agent := *p.agent
	agent.Model = model
	runID := p.runID(s, k)
	_, err := p.runner.Run(ctx, &agent, pipeline.UserInput("question "+strconv.Itoa(k)),
		pipeline.WithRunID(runID), pipeline.WithSessionID(p.sessionID(s)))
	for try := 0; err != nil && errors.Is(err, state.ErrConflict) && try < 5; try++ {
		p.conflicts.Add(1)
		_, err = p.cp.Resume(ctx, p.runner, &agent, runID)
		if _, ok := errors.AsType[*checkpoint.FinishedError](err); ok {
			err = nil
		}
		if err == nil {
			p.retried.Add(1)
		}
	}
	if err != nil {
		p.fail(err)
		return
	}
	p.record(marks, time.Now())
}

// answer is the scripted model's n-th call of an invocation: after the
// model's latency, a tool call for the first ToolTurns turns, then a final
// message.
func (p *process) answer(ctx context.Context, c *pipeline.ModelCall, n int) (*pipeline.ModelResponse, error) {
	t := time.NewTimer(p.cfg.ModelLatency)
	select {
	case <-ctx.Done():
		t.Stop()
		return nil, ctx.Err()
	case <-t.C:
	}
	turn := c.Turn.Number
	id := strconv.Itoa(turn) + "_" + strconv.Itoa(n)
	var it state.Item
	if turn <= p.cfg.ToolTurns {
		it = state.ToolCall("fc_"+id, "call_"+id, ToolName, args(p.cfg.ArgBytes))
	} else {
		it = state.AssistantMessage("msg_"+id, text(p.cfg.OutputBytes))
	}
	return &pipeline.ModelResponse{ID: "resp_" + id, Model: "scripted", Items: []state.Item{it},
		Usage: state.Usage{Requests: 1}}, nil
}

// fail counts a failed run and keeps its error if it is among the first.
func (p *process) fail(err error) {
	p.failures.Add(1)
	p.mu.Lock()
	if len(p.firstErrs) < 5 {
		p.firstErrs = append(p.firstErrs, err.Error())
	}
	p.mu.Unlock()
}

// record counts a run that ended at end, whose model calls started at
// marks: its turns and their latencies that ended in the window, and the
// run if it ended in the window.
func (p *process) record(marks []time.Time, end time.Time) {
	marks = append(marks, end)
	p.allTurns.Add(int64(len(marks) - 1))
	var lat []int64
	for i := 1; i < len(marks); i++ {
		if t := marks[i]; !t.Before(p.from) && t.Before(p.to) {
			lat = append(lat, marks[i].Sub(marks[i-1]).Microseconds())
		}
	}
	if len(lat) > 0 {
		p.turns.Add(int64(len(lat)))
		p.mu.Lock()
		p.latencies = append(p.latencies, lat...)
		p.mu.Unlock()
	}
	if !end.Before(p.from) && end.Before(p.to) {
		p.runs.Add(1)
	}
}
