package scripted

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// ErrScriptExhausted means the model was called more times than its script
// has steps. It is wrapped by [*ExhaustedError].
var ErrScriptExhausted = errors.New("scripted: script exhausted")

// An ExhaustedError reports a call past the end of the script.
type ExhaustedError struct {
	Steps int // the script's length
	Call  int // the call that found no step, from 1
}

// Error names the call number and the script's length.
func (e *ExhaustedError) Error() string {
	return "scripted: call " + strconv.Itoa(e.Call) + " but the script has " + strconv.Itoa(e.Steps) + " steps"
}

// Unwrap returns [ErrScriptExhausted].
func (e *ExhaustedError) Unwrap() error { return ErrScriptExhausted }

// A Part is one output item of a step.
type Part struct {
	kind    state.Kind
	name    string
	text    string
	refusal bool
	item    state.Item // a prepared item, sent as it is
}

// Text is an assistant message part.
func Text(text string) Part { return Part{kind: state.KindAssistantMessage, text: text} }

// Refuse is an assistant message part that refuses, with the refusal text
// as its only content: what a model sends instead of a structured output
// it will not produce.
func Refuse(text string) Part {
	return Part{kind: state.KindAssistantMessage, text: text, refusal: true}
}

// Call is a function call part.
func Call(name, arguments string) Part {
	return Part{kind: state.KindToolCall, name: name, text: arguments}
}

// Item is a part that sends a prepared item as it is, such as a hosted
// call ([state.HostedCall]) or an opaque item. Its position is the run's.
func Item(it state.Item) Part { return Part{kind: it.Kind(), item: it.WithSeq(0)} }

// Think is a reasoning part with the given summary.
func Think(summary string) Part { return Part{kind: state.KindReasoning, text: summary} }

// A Step is the model's answer to one call.
type Step struct {
	parts []Part
	err   error
	delay time.Duration
	block bool
	usage *state.Usage
}

// Respond returns a step whose response has the given parts, in order.
func Respond(parts ...Part) Step { return Step{parts: parts} }

// Reply returns a step that answers with one assistant message.
func Reply(text string) Step { return Respond(Text(text)) }

// CallTool returns a step that calls one tool.
func CallTool(name, arguments string) Step { return Respond(Call(name, arguments)) }

// Fail returns a step whose call fails with err.
func Fail(err error) Step { return Step{err: err} }

// Block returns a step that waits until the call's context is done and
// returns its error: a model call that never answers.
func Block() Step { return Step{block: true} }

// After returns a copy of s that answers only after d (or fails with the
// context's error if it is done first).
func (s Step) After(d time.Duration) Step {
	s.delay = d
	return s
}

// WithUsage returns a copy of s that reports u instead of the default
// usage (input tokens: the number of input items; output tokens: the
// number of parts).
func (s Step) WithUsage(u state.Usage) Step {
	s.usage = &u
	return s
}

// A Request is what the model recorded of one call.
type Request struct {
	Agent        string
	Instructions string
	// Input is the model input, an immutable view.
	Input  state.Items
	Tools  []string
	Stream bool
	// Run and Turn are the ID and turn of the run that made the call;
	// empty and 0 for a call outside a run.
	Run  string
	Turn int
}

// A Model is a scripted [pipeline.Model].
type Model struct {
	name string
	next func(n int) (Step, bool)
	pick func(c *pipeline.ModelCall) (Step, error) // a Rules model's, instead of next

	mu    sync.Mutex
	n     int
	calls []Request
	steps int
	fresh string             // FreshIDs: the model's random tag, so every response's IDs are new
	fail  map[string][]error // FailNext: the errors each run's next calls fail with
}

var _ pipeline.Model = (*Model)(nil)

// New returns a model that answers the n-th call with steps[n-1].
func New(steps ...Step) *Model {
	steps = append([]Step(nil), steps...)
	return &Model{name: "scripted", steps: len(steps), next: func(n int) (Step, bool) {
		if n > len(steps) {
			return Step{}, false
		}
		return steps[n-1], true
	}}
}

// Generate returns a model with an endless script: the n-th call (from 1)
// is answered with f(n). f must be safe for concurrent use. Benchmarks use
// it for runs of any length.
func Generate(f func(n int) Step) *Model {
	if f == nil {
		panic("scripted: Generate called with a nil func")
	}
	return &Model{name: "scripted", steps: -1, next: func(n int) (Step, bool) { return f(n), true }}
}

// FreshIDs makes every response carry IDs no earlier response had, of m
// or of another model, and returns m. By default the IDs of a response
// depend only on its run and turn (call_<run>_<turn>_<k>), so a turn
// replayed after a crash gets the same call IDs, which a test of tools
// cannot tell from a retry. A real model answers again with new IDs: use
// FreshIDs in crash and resume tests that must see a tool re-run under a
// new call ID (and a new idempotency key), also when each process of the
// test has a model of its own. The IDs then carry a random tag of the
// model's and the number of its call. Call it before the model's first
// use.
func (m *Model) FreshIDs() *Model {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	m.mu.Lock()
	m.fresh = hex.EncodeToString(b[:])
	m.mu.Unlock()
	return m
}

// FailNext makes the next len(errs) calls of the run runID fail with
// errs, in order, before the script is consulted: a provider's transient
// failures (a 503, a 429) that the run's retry, or its job's next
// attempt, gets past. The failed calls take no step: a [Rules] model
// answers the retried turn as if they had not happened, and a [New]
// script's position does not move. Calls are still recorded ([Model.Calls]).
// Repeated calls add to the run's queue. FailNext is safe to call while
// the model serves calls.
func (m *Model) FailNext(runID string, errs ...error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail == nil {
		m.fail = make(map[string][]error)
	}
	m.fail[runID] = append(m.fail[runID], errs...)
}

// Name returns the model name the responses report ("scripted").
func (m *Model) Name() string { return m.name }

// Calls returns a copy of the requests received so far, in order.
func (m *Model) Calls() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Request, len(m.calls))
	for i, c := range m.calls {
		c.Tools = append([]string(nil), c.Tools...)
		out[i] = c
	}
	return out
}

// Respond answers c with the next step of the script.
func (m *Model) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tools := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		tools[i] = t.Name
	}
	req := Request{Agent: c.Agent.Name, Instructions: c.Instructions, Input: c.Input, Tools: tools, Stream: c.Stream}
	if c.Turn != nil && c.Turn.Run != nil {
		req.Run, req.Turn = c.Turn.Run.ID(), c.Turn.Number
	}
	n, fresh, err := m.record(req)
	if err != nil {
		return nil, err
	}

	step, err := m.step(c, n)
	if err != nil {
		return nil, err
	}
	if step.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if step.delay > 0 {
		timer := time.NewTimer(step.delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
	if step.err != nil {
		return nil, step.err
	}
	var prefixBuf [80]byte // the IDs' shared part: on the stack unless the run ID is longer than about 60 bytes
	prefix := appendIDPrefix(prefixBuf[:0], c, n)
	if fresh != "" && c.Turn != nil && c.Turn.Run != nil {
		// The model's n-th call: never seen before.
		prefix = append(strconv.AppendInt(append(append(prefix, fresh...), 'c'), int64(n), 10), '_')
	}
	resp := &pipeline.ModelResponse{ID: "resp" + string(prefix[:len(prefix)-1]), Model: m.name, Items: make([]state.Item, len(step.parts))}
	for k, p := range step.parts {
		if !p.item.IsZero() {
			resp.Items[k] = p.item
			continue
		}
		switch p.kind {
		case state.KindAssistantMessage:
			id := itemID("msg", prefix, k+1)
			if c.Stream {
				streamText(c, id, p.text)
			}
			if p.refusal {
				resp.Items[k] = refusal(id, p.text)
				break
			}
			resp.Items[k] = state.AssistantMessage(id, p.text)
		case state.KindReasoning:
			resp.Items[k] = state.Reasoning(itemID("rs", prefix, k+1), p.text)
		default:
			resp.Items[k] = state.ToolCall(itemID("fc", prefix, k+1), itemID("call", prefix, k+1), p.name, p.text)
		}
	}
	if step.usage != nil {
		resp.Usage = *step.usage
	} else {
		resp.Usage = state.Usage{Requests: 1, InputTokens: int64(c.Input.Len()), OutputTokens: int64(len(step.parts))}
	}
	return resp, nil
}

// record records the call, and returns its number and the model's fresh
// tag, or the error a [Model.FailNext] queued for its run (the call then
// takes no number).
func (m *Model) record(req Request) (n int, fresh string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, req)
	if errs := m.fail[req.Run]; len(errs) > 0 && req.Run != "" {
		m.fail[req.Run] = errs[1:]
		return 0, "", errs[0]
	}
	m.n++
	return m.n, m.fresh, nil
}

// step returns the step that answers call c, the model's n-th.
func (m *Model) step(c *pipeline.ModelCall, n int) (Step, error) {
	if m.pick != nil {
		return m.pick(c)
	}
	step, ok := m.next(n)
	if !ok {
		return Step{}, &ExhaustedError{Steps: m.steps, Call: n}
	}
	return step, nil
}

// appendIDPrefix appends to b the part the IDs of a response share
// (before [Model.FreshIDs] adds the call's number): "_<run>_<turn>_" for a
// call made by a run, so that IDs are unique across the runs of a session
// and across the models of one run (a handoff), and deterministic for a
// given run ID; "_<n>_" for the n-th call of a model used outside a run.
// Characters of the run ID other than ASCII letters, digits, '-' and '_'
// (the '/' of a nested run's ID) become '-'. Written into the caller's
// buffer, the prefix costs no allocation, whatever the length of the run
// ID (the runner's own are 36 bytes, past the compiler's 32-byte scratch
// for a conversion) or of the turn number.
func appendIDPrefix(b []byte, c *pipeline.ModelCall, n int) []byte {
	b = append(b, '_')
	if c.Turn == nil || c.Turn.Run == nil {
		return append(strconv.AppendInt(b, int64(n), 10), '_')
	}
	id := c.Turn.Run.ID()
	for i := 0; i < len(id); i++ {
		ch := id[i]
		if !('a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '-' || ch == '_') {
			ch = '-'
		}
		b = append(b, ch)
	}
	b = append(b, '_')
	return append(strconv.AppendInt(b, int64(c.Turn.Number), 10), '_')
}

// itemID returns the ID of a response's k-th item: kind, the response's
// prefix and k, written into one buffer and converted once.
func itemID(kind string, prefix []byte, k int) string {
	var buf [96]byte
	b := append(append(buf[:0], kind...), prefix...)
	return string(strconv.AppendInt(b, int64(k), 10))
}

// streamText emits the text word by word, as a streaming model would.
func streamText(c *pipeline.ModelCall, id, text string) {
	for len(text) > 0 {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			i = len(text) - 1
		}
		c.Emit(pipeline.TextDelta{ItemID: id, Delta: text[:i+1]})
		text = text[i+1:]
	}
}

// refusal returns an assistant message whose content is a refusal.
func refusal(id, text string) state.Item {
	raw := append([]byte(`{"type":"message","id":`), jsonw.AppendString(nil, id)...)
	raw = append(raw, `,"role":"assistant","status":"completed","content":[{"type":"refusal","refusal":`...)
	raw = jsonw.AppendString(raw, text)
	raw = append(raw, `}]}`...)
	it, err := state.ParseItem(state.KindAssistantMessage, raw)
	if err != nil {
		panic("scripted: refusal item: " + err.Error()) // the JSON is built above
	}
	return it
}
