package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A Harness is what an adapter's test gives the suite.
type Harness struct {
	// New returns the model under test for one run of case c. A model
	// over HTTP points its real SDK client at srv (srv.URL and
	// srv.Client()), with retries off and its model name set; srv is nil
	// when Reply is nil. New is called once per run: twice for a case run
	// plain and streamed.
	New func(t *testing.T, c *Case, srv *Server) pipeline.Model
	// Reply returns the provider's answer to r: its recorded payload for
	// turn r.Turn of r.Case, plain or streamed (see the package
	// documentation). Nil for a model that sends no request.
	Reply func(t *testing.T, r *Request) Reply
	// Unsupported lists the features the provider cannot take. For their
	// cases the suite checks that the model refuses the call with an
	// error before the request that would carry the feature.
	Unsupported []Feature
	// NoCacheWrites reports a provider whose usage has no count of input
	// tokens written to its prompt cache (OpenAI and Gemini cache
	// implicitly): the usage case then expects CacheWriteTokens to be 0
	// where its turns report some.
	NoCacheWrites bool
}

// A Feature is something a case needs of the provider beyond text and
// function calls.
type Feature string

// The features some providers cannot take.
const (
	// FeatureImageInput is an image (a data URL) in a user message.
	FeatureImageInput Feature = "image input"
	// FeatureToolOutputImage is an image in a function call's output.
	FeatureToolOutputImage Feature = "image in a tool output"
)

// A Case is one provider-neutral scenario.
type Case struct {
	// Name names the case, such as "ToolCall"; a harness may pick its
	// recorded payloads by it. Names are unique within [Cases].
	Name string
	// Input is the run's input.
	Input []state.Item
	// Structured reports that the agent asks for structured output: a
	// JSON object {"city": string, "celsius": integer}, both required,
	// named "weather" (see [WeatherSchema]).
	Structured bool
	// Turns are the model's answers to the run's model calls, in order.
	Turns []Turn
	// Feature is what the case needs beyond text and function calls, and
	// FeatureTurn the turn whose request first carries it.
	Feature     Feature
	FeatureTurn int
	// StreamOnly and PlainOnly restrict the modes the case runs in; by
	// default it runs in both.
	StreamOnly bool
	PlainOnly  bool

	// check checks one run; whole, when set, runs the case instead.
	check func(t *testing.T, o *outcome)
	whole func(t *testing.T, h Harness, c *Case)
}

// A Turn is what the model answers to one model call.
type Turn struct {
	// Text is the assistant message's text ("" for none); for a
	// structured case, the JSON the model produced.
	Text string
	// Refusal is the text of a refusal, the whole answer when set.
	Refusal string
	// Calls are the function calls the model makes after the message, in
	// order. The provider gives them IDs of its own.
	Calls []Call
	// Usage is what the provider reports for the call: InputTokens
	// counts all input tokens, CachedTokens those read from the cache,
	// CacheWriteTokens those written to it. Requests is 1.
	Usage state.Usage
	// Err, when set, is the API error the provider answers with instead.
	Err *APIError
	// Cut means the provider's stream stops after the first text delta,
	// the connection kept open: the suite cancels the run at that delta.
	Cut bool
}

// A Call is one function call of a turn.
type Call struct {
	Name      string
	Arguments string // a JSON object
}

// An APIError is an HTTP error the provider answers with.
type APIError struct {
	Status int
	// RequestID is the request ID the provider reports in its header.
	RequestID string
	Message   string
}

// The tools every case's agent has.
const (
	// WeatherTool's output is the text "sunny, 22C in <city>".
	WeatherTool = "get_weather"
	// ChartTool's output is a text part "Chart for <city>:" and an
	// image part holding [ImagePNG] as a data URL.
	ChartTool = "weather_chart"
)

// ImagePNG is the base64 of the PNG image the cases send, a 1×1 pixel.
const ImagePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// WeatherSchema is the JSON schema of the structured output.
const WeatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"celsius":{"type":"integer"}},"required":["city","celsius"],"additionalProperties":false}`

// Weather is the structured output the structured cases decode.
type Weather struct {
	City    string `json:"city"`
	Celsius int    `json:"celsius"`
}

// Run runs every case of [Cases] against the harness's model, each as a
// subtest, in the modes it runs in ("plain", "stream").
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		panic("modeltest: Run called with a nil Harness.New")
	}
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if slices.Contains(h.Unsupported, c.Feature) && c.Feature != "" {
				for _, stream := range c.modes() {
					t.Run(modeName(stream), func(t *testing.T) { checkRefused(t, runCase(t, h, c, stream)) })
				}
				return
			}
			if c.whole != nil {
				c.whole(t, h, c)
				return
			}
			for _, stream := range c.modes() {
				t.Run(modeName(stream), func(t *testing.T) { c.check(t, runCase(t, h, c, stream)) })
			}
		})
	}
}

func modeName(stream bool) string {
	if stream {
		return "stream"
	}
	return "plain"
}

func (c *Case) modes() []bool {
	switch {
	case c.StreamOnly:
		return []bool{true}
	case c.PlainOnly:
		return []bool{false}
	}
	return []bool{false, true}
}

// An outcome is what one run of a case gave.
type outcome struct {
	h      *Harness
	c      *Case
	stream bool
	res    *pipeline.Result
	err    error
	deltas []pipeline.TextDelta
	srv    *Server
}

// bodies returns the request bodies, or nil for a model without requests.
func (o *outcome) bodies() [][]byte {
	if o.srv == nil {
		return nil
	}
	return o.srv.Bodies()
}

// runCase runs c once, plain or streamed.
func runCase(t *testing.T, h Harness, c *Case, stream bool) *outcome {
	t.Helper()
	o := &outcome{h: &h, c: c, stream: stream}
	if h.Reply != nil {
		o.srv = newServer(t, c, stream, h.Reply)
	}
	agent := &pipeline.Agent{
		Name:         "weather",
		Instructions: "You answer questions about the weather.",
		Model:        h.New(t, c, o.srv),
		Tools:        []pipeline.Tool{weatherTool{}, chartTool{}},
	}
	if c.Structured {
		agent.Output = weatherOutput{}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runner := pipeline.NewRunner()
	// One run ID per case, so that a model whose IDs derive from it
	// (scripted) gives a plain and a streamed run the same items.
	id := pipeline.WithRunID("modeltest-" + c.Name)
	if !stream {
		o.res, o.err = runner.Run(ctx, agent, c.Input, id)
		return o
	}
	for ev, err := range runner.Stream(ctx, agent, c.Input, id) {
		if err != nil {
			o.err = err
			break
		}
		switch ev := ev.(type) {
		case pipeline.TextDelta:
			o.deltas = append(o.deltas, ev)
			if c.cut() {
				cancel()
			}
		case pipeline.RunCompleted:
			o.res = ev.Result
		}
	}
	return o
}

func (c *Case) cut() bool { return slices.ContainsFunc(c.Turns, func(t Turn) bool { return t.Cut }) }

// checkRefused checks a run of a case whose feature the provider cannot
// take: an error, and no request carrying the feature.
func checkRefused(t *testing.T, o *outcome) {
	t.Helper()
	if o.err == nil {
		t.Fatalf("%s is unsupported, but the run succeeded", o.c.Feature)
	}
	if errors.Is(o.err, context.Canceled) || errors.Is(o.err, context.DeadlineExceeded) {
		t.Fatalf("%s is unsupported: run error = %v, want the model's refusal", o.c.Feature, o.err)
	}
	if o.srv != nil {
		if n := len(o.bodies()); n != o.c.FeatureTurn {
			t.Errorf("%s is unsupported: %d requests sent, want %d (none carrying it)", o.c.Feature, n, o.c.FeatureTurn)
		}
	}
}

// checkRun checks a run that should finish: the items it recorded, its
// final output and usage, the deltas of a stream, and what the requests
// carried.
func checkRun(t *testing.T, o *outcome) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("run: %v", o.err)
	}
	if o.res == nil {
		t.Fatal("run: no result")
	}
	c := o.c
	last := c.Turns[len(c.Turns)-1]
	if got := o.res.FinalOutput(); got != last.Text {
		t.Errorf("final output = %q, want %q", got, last.Text)
	}
	checkItems(t, o)
	checkUsage(t, o)
	if o.stream {
		checkDeltas(t, o)
	}
	if bodies := o.bodies(); o.srv != nil && len(bodies) != len(c.Turns) {
		t.Errorf("%d requests sent, want %d", len(bodies), len(c.Turns))
	}
}

// modelItems returns the run's new items without its input and without
// reasoning (a provider may add reasoning items of its own).
func modelItems(o *outcome) []state.Item {
	var out []state.Item
	for _, it := range o.res.NewItems() {
		if it.Kind() != state.KindReasoning && it.Kind() != state.KindUserMessage {
			out = append(out, it)
		}
	}
	return out
}

// checkItems checks the recorded items against the turns: per turn, the
// message, the calls in order, then their outputs in call order, each
// output answering its call by ID; and that the request of the next turn
// carries the calls' IDs and outputs.
func checkItems(t *testing.T, o *outcome) {
	t.Helper()
	items := modelItems(o)
	bodies := o.bodies()
	k := 0
	next := func(what string) (state.Item, bool) {
		if k >= len(items) {
			t.Errorf("items: %s missing; got %v", what, items)
			return state.Item{}, false
		}
		k++
		return items[k-1], true
	}
	for ti, turn := range o.c.Turns {
		if turn.Text != "" || turn.Refusal != "" {
			it, ok := next(fmt.Sprintf("turn %d message", ti))
			if !ok {
				return
			}
			want := turn.Text + turn.Refusal
			if it.Kind() != state.KindAssistantMessage || it.Text() != want {
				t.Errorf("turn %d: item %v text %q, want an assistant message %q", ti, it, it.Text(), want)
			}
		}
		calls := make([]state.Item, 0, len(turn.Calls))
		for ci, call := range turn.Calls {
			it, ok := next(fmt.Sprintf("turn %d call %d", ti, ci))
			if !ok {
				return
			}
			if it.Kind() != state.KindToolCall || it.Name() != call.Name || it.CallID() == "" {
				t.Errorf("turn %d: item %v, want a call of %s with a call ID", ti, it, call.Name)
			}
			if !jsonEqual(it.Text(), call.Arguments) {
				t.Errorf("turn %d call %d arguments = %s, want %s", ti, ci, it.Text(), call.Arguments)
			}
			calls = append(calls, it)
		}
		for ci, call := range calls {
			out, ok := next(fmt.Sprintf("turn %d output %d", ti, ci))
			if !ok {
				return
			}
			if out.Kind() != state.KindToolOutput || out.CallID() != call.CallID() {
				t.Errorf("turn %d: item %v, want the output of call %s", ti, out, call.CallID())
			}
			if ti+1 < len(bodies) {
				body := bodies[ti+1]
				if !bytes.Contains(body, []byte(call.CallID())) {
					t.Errorf("request %d does not carry call ID %s", ti+2, call.CallID())
				}
				if !bytes.Contains(body, []byte(outputText(call))) {
					t.Errorf("request %d does not carry the output %q of call %s", ti+2, outputText(call), call.CallID())
				}
			}
		}
	}
	if k < len(items) {
		t.Errorf("items: %d more than the turns make: %v", len(items)-k, items[k:])
	}
}

// outputText returns the text of the output a suite tool gives to call.
func outputText(call state.Item) string {
	var args struct {
		City string `json:"city"`
	}
	_ = json.Unmarshal([]byte(call.Text()), &args)
	if call.Name() == ChartTool {
		return "Chart for " + args.City + ":"
	}
	return "sunny, 22C in " + args.City
}

func jsonEqual(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return a == b
	}
	return reflect.DeepEqual(va, vb)
}

// checkUsage checks the run's usage: one request per turn, tokens summed.
func checkUsage(t *testing.T, o *outcome) {
	t.Helper()
	var want state.Usage
	for _, turn := range o.c.Turns {
		u := turn.Usage
		u.Requests = 1
		if o.h.NoCacheWrites {
			u.CacheWriteTokens = 0
		}
		want.Add(u)
	}
	if got := o.res.Usage(); got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
}

// checkDeltas checks that a stream's text deltas join into the text of
// its messages, in order.
func checkDeltas(t *testing.T, o *outcome) {
	t.Helper()
	var want, got strings.Builder
	for _, turn := range o.c.Turns {
		want.WriteString(turn.Text)
	}
	for _, d := range o.deltas {
		if d.Delta == "" {
			t.Errorf("empty text delta of item %q", d.ItemID)
		}
		got.WriteString(d.Delta)
	}
	if o.c.Turns[len(o.c.Turns)-1].Refusal != "" {
		return // a refusal may stream as text or not at all
	}
	if got.String() != want.String() {
		t.Errorf("text deltas join into %q, want %q", got.String(), want.String())
	}
}

// checkError checks a run whose only turn is an API error.
func checkError(t *testing.T, o *outcome) {
	t.Helper()
	want := o.c.Turns[0].Err
	if o.err == nil {
		t.Fatal("run succeeded, want a model error")
	}
	me, ok := errors.AsType[*pipeline.ModelError](o.err)
	if !ok {
		t.Fatalf("run error = %v (%T), want a *pipeline.ModelError", o.err, o.err)
	}
	if !errors.Is(o.err, pipeline.ErrModel) {
		t.Errorf("errors.Is(%v, pipeline.ErrModel) = false", o.err)
	}
	if me.Status != want.Status {
		t.Errorf("Status = %d, want %d", me.Status, want.Status)
	}
	if me.RequestID != want.RequestID {
		t.Errorf("RequestID = %q, want %q", me.RequestID, want.RequestID)
	}
	retry := want.Status == http.StatusTooManyRequests || want.Status >= http.StatusInternalServerError
	if me.Retryable != retry {
		t.Errorf("Retryable = %v for status %d, want %v", me.Retryable, want.Status, retry)
	}
	if o.srv != nil {
		if n := len(o.bodies()); n != 1 {
			t.Errorf("%d requests sent, want 1 (the client must not retry)", n)
		}
	}
}
