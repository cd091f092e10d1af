package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/turnkit/turnkit/pipeline"
)

// An Execution is one run of a torture tool, as its [EffectLog] records
// it before the tool returns.
type Execution struct {
	// Key is the call's idempotency key ([pipeline.ToolCall.IdempotencyKey]).
	Key  string `json:"key"`
	Exec string `json:"exec"` // unique per execution: the process and a counter
	Tool string `json:"tool"`
	Run  string `json:"run"`
	Step int    `json:"step"`
	// Index is the call's place among the calls of its step.
	Index int `json:"index"`
	PID   int `json:"pid"`
}

// An EffectLog is an append-only file of executions, one JSON line each,
// written with one write and synced before the tool returns: the side
// effects of the torture tools. Several processes may append to one file.
type EffectLog struct {
	mu  sync.Mutex
	f   *os.File
	pid int
	n   int
}

// OpenEffectLog opens (creating it if needed) the log at path for
// appending.
func OpenEffectLog(path string) (*EffectLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("torture: open effect log: %w", err)
	}
	return &EffectLog{f: f, pid: os.Getpid()}, nil
}

// Close closes the log.
func (l *EffectLog) Close() error { return l.f.Close() }

// record appends e, with its exec ID and PID filled in, and syncs.
func (l *EffectLog) record(e Execution) (Execution, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	e.PID = l.pid
	e.Exec = strconv.Itoa(l.pid) + "-" + strconv.Itoa(l.n)
	line, err := json.Marshal(e)
	if err != nil {
		return e, err
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return e, fmt.Errorf("torture: effect log: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return e, fmt.Errorf("torture: effect log: %w", err)
	}
	return e, nil
}

// ReadEffectLog reads every execution in the log at path. A record cut
// short by a crash is skipped and reported as torn: the last line without
// its newline, or the start of a line that a later process's record
// follows (a SIGKILL can cut a write short, and the next writer appends
// after the fragment). Its execution never returned, so nothing it did was
// committed. Any other bad line is an error. A missing file has no
// executions.
func ReadEffectLog(path string) (execs []Execution, torn bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	lines := bytes.Split(data, []byte("\n"))
	last := len(lines) - 1
	torn = len(lines[last]) > 0 // no newline after it: a write cut short
	for i, line := range lines[:last] {
		var e Execution
		err := json.Unmarshal(line, &e)
		if err != nil {
			// A fragment of a killed writer's record, then a whole record.
			if at := bytes.LastIndex(line, []byte(`{"key":`)); at > 0 && json.Unmarshal(line[at:], &e) == nil {
				err, torn = nil, true
			}
		}
		if err != nil {
			return nil, false, fmt.Errorf("torture: effect log %s line %d: %w", path, i+1, err)
		}
		execs = append(execs, e)
	}
	return execs, torn, nil
}

// toolOutput is what a torture tool returns: the execution that produced
// it, so the checks can tell which execution a stored output came from.
type toolOutput struct {
	Exec string `json:"exec"`
	Key  string `json:"key"`
	// Note is [TripMarker] in the finish tool's output of a run whose
	// final output trips the output guardrail.
	Note string `json:"note,omitempty"`
}

// LookupTimeout is the time limit of a lookup call: a slow one (see
// [CallSpec.Slow]) runs past it.
const LookupTimeout = 100 * time.Millisecond

// Notes of a lookup's output that is its timeout, which the model got as
// the output: TimedOutNote when the lookup ran past its limit (a slow
// one), TimedOutEarlyNote when the limit passed before the lookup began
// (a busy machine may delay any call that long), so it never ran.
const (
	TimedOutNote      = "timed out"
	TimedOutEarlyNote = "timed out before it ran"
)

// A slowError is what a slow lookup returns once its context is done: the
// execution it was, so that the output the model gets names it.
type slowError struct {
	exec, key string
	err       error
}

func (e *slowError) Error() string { return "torture: lookup " + e.exec + ": " + e.err.Error() }
func (e *slowError) Unwrap() error { return e.err }

// ToolErrorText renders the output the model gets for a tool error: a
// timed out lookup's as a tool output naming the execution, with
// [TimedOutNote], or with [TimedOutEarlyNote] and no execution when it
// never ran; anything else as the runner's default would.
func ToolErrorText(c *pipeline.ToolCall, err error) string {
	if _, timedOut := errors.AsType[*pipeline.ToolTimeoutError](err); timedOut {
		o := toolOutput{Key: c.IdempotencyKey(), Note: TimedOutEarlyNote}
		if se, isSlow := errors.AsType[*slowError](err); isSlow {
			o = toolOutput{Exec: se.exec, Key: se.key, Note: TimedOutNote}
		}
		out, _ := json.Marshal(o) // strings always marshal
		return string(out)
	}
	return "An error occurred while running the tool. Please try again. Error: " + err.Error()
}

// A tortureTool records each execution in the effect log and returns the
// execution's ID.
type tortureTool struct {
	name string
	log  *EffectLog
}

var _ pipeline.TimeoutTool = (*tortureTool)(nil)

// Timeout returns [LookupTimeout] for a lookup, and 0 (no limit) for the
// other tools.
func (t *tortureTool) Timeout() time.Duration {
	if t.name == ToolLookup {
		return LookupTimeout
	}
	return 0
}

// NewTools returns the torture agents' tools, [ToolEffect],
// [ToolTransfer], [ToolFinish] and [ToolLookup], all recording into log.
// A lookup's record stands for a read: the checks allow what a retryable
// call may do after a crash (see [Check]).
func NewTools(log *EffectLog) []pipeline.Tool {
	return []pipeline.Tool{
		&tortureTool{name: ToolEffect, log: log}, &tortureTool{name: ToolTransfer, log: log},
		&tortureTool{name: ToolFinish, log: log}, &tortureTool{name: ToolLookup, log: log},
	}
}

func (t *tortureTool) Spec() pipeline.ToolSpec {
	desc := "Performs a side effect of the torture harness."
	if t.name == ToolLookup {
		desc = "Reads something for the torture harness; it changes nothing."
	}
	return pipeline.ToolSpec{
		Name:        t.name,
		Description: desc,
		Parameters: json.RawMessage(`{"type":"object","properties":{"run":{"type":"string"},"step":{"type":"integer"},` +
			`"index":{"type":"integer"},"reject":{"type":"boolean"},"trip":{"type":"boolean"},"slow":{"type":"boolean"}},"required":["run","step","index"],"additionalProperties":false}`),
	}
}

func (t *tortureTool) Call(ctx context.Context, c *pipeline.ToolCall) (string, error) {
	var a callArgs
	if err := json.Unmarshal([]byte(c.Arguments), &a); err != nil {
		return "", &pipeline.ArgumentError{Tool: c.Name, CallID: c.CallID, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	e, err := t.log.record(Execution{Key: c.IdempotencyKey(), Tool: t.name, Run: a.Run, Step: a.Step, Index: a.Index})
	if err != nil {
		return "", err
	}
	if a.Slow {
		<-ctx.Done() // runs past its time limit
		return "", &slowError{exec: e.Exec, key: e.Key, err: ctx.Err()}
	}
	o := toolOutput{Exec: e.Exec, Key: e.Key}
	if a.Trip {
		o.Note = TripMarker
	}
	out, err := json.Marshal(o)
	return string(out), err
}
