package compaction_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/compaction"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func kinds(in state.Items) string {
	var b []string
	for _, it := range in.All() {
		s := it.Kind().String()
		if it.CallID() != "" {
			s += "[" + it.CallID() + "]"
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

// TestCut checks where a boundary may fall: never between a call and its
// output, never between reasoning and the item after it.
func TestCut(t *testing.T) {
	t.Parallel()
	user, reply := state.UserMessage("u"), state.AssistantMessage("", "a")
	call := state.ToolCall("", "c1", "f", "{}")
	out := state.ToolOutput("c1", "f", "ok")
	think := state.Reasoning("", "hmm")
	tests := []struct {
		name  string
		items []state.Item
		want  int // the cut asked for
		got   int
	}{
		{"between messages", []state.Item{user, reply, user, reply}, 2, 2},
		{"keeps an output's call", []state.Item{user, call, out, reply}, 2, 1},
		{"keeps the reasoning before a call", []state.Item{user, think, call, out, reply}, 3, 1},
		{"keeps the reasoning before a message", []state.Item{user, think, reply, user}, 2, 1},
		{"nothing left to cut", []state.Item{call, out}, 1, 0},
		{"a call ID used again keeps the latest call", []state.Item{call, out, user, call, out, reply}, 4, 3},
		{"a call ID used again, both pairs kept", []state.Item{user, call, out, call, out}, 1, 1},
		{"beyond the end", []state.Item{user, reply}, 5, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := compaction.Cut(state.ItemsOf(tt.items), tt.want); got != tt.got {
				t.Errorf("Cut(%s, %d) = %d, want %d", kinds(state.ItemsOf(tt.items)), tt.want, got, tt.got)
			}
		})
	}
}

// conversation runs messages of one session through persistence (with
// WithContinuation) and compaction, recording every model input.
type conversation struct {
	t          *testing.T
	store      session.Store
	summarizer *scripted.Model
	inputs     [][]string // the agent model's inputs, by call
	tokens     []int      // their estimated tokens
	runner     *pipeline.Runner
}

func newConversation(t *testing.T, opts ...compaction.Option) *conversation {
	c := &conversation{t: t, store: memory.New()}
	n := 0
	c.summarizer = scripted.Generate(func(int) scripted.Step {
		n++
		return scripted.Reply(fmt.Sprintf("summary %d", n))
	})
	probe := pipeline.Middleware{Name: "probe", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, mc *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			var in []string
			for _, it := range mc.Input.All() {
				in = append(in, it.Text())
			}
			c.inputs = append(c.inputs, in)
			c.tokens = append(c.tokens, compaction.EstimateTokens(mc.Input))
			return next.Respond(ctx, mc)
		})
	}}
	c.runner = pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(c.store, persistence.WithContinuation(), persistence.WithHistoryByReference()),
		compaction.Middleware(compaction.Summarize(c.summarizer), opts...),
		probe,
	))
	return c
}

func (c *conversation) message(i int) {
	c.t.Helper()
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply(fmt.Sprintf("re %d", i)))}
	if _, err := c.runner.Run(context.Background(), agent, pipeline.UserInput(fmt.Sprintf("m %d", i)),
		pipeline.WithSessionID("s"), pipeline.WithRunID(fmt.Sprintf("r%d", i))); err != nil {
		c.t.Fatal(err)
	}
}

// TestBoundedView: with a threshold of 6 items, no model call sees more,
// however long the conversation; the session keeps every item; and each
// run starts from the last boundary instead of summarising again.
func TestBoundedView(t *testing.T) {
	t.Parallel()
	c := newConversation(t, compaction.WithMaxItems(6), compaction.WithKeep(2))
	const messages = 20
	for i := range messages {
		c.message(i)
	}
	for i, in := range c.inputs {
		if len(in) > 6 {
			t.Fatalf("model call %d saw %d items, over the threshold of 6: %q", i, len(in), in)
		}
	}
	// The last message's view: the last summary, the two items kept, the
	// items since.
	last := c.inputs[len(c.inputs)-1]
	if !strings.HasPrefix(last[0], compaction.SummaryPrefix+"summary ") || last[len(last)-1] != "m 19" {
		t.Fatalf("last model input %q, want a summary first and the last message last", last)
	}
	all, err := c.store.List(context.Background(), "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2*messages {
		t.Fatalf("the session holds %d items, want all %d", len(all), 2*messages)
	}
	// A compaction every few messages, not one per message: each run read
	// the boundary the one before recorded.
	if n := len(c.summarizer.Calls()); n == 0 || n > messages/2 {
		t.Fatalf("%d summaries over %d messages, want at most %d", n, messages, messages/2)
	}
	// The summarizer saw the last summary (not the whole session again).
	for _, call := range c.summarizer.Calls()[1:] {
		if first := call.Input.At(0).Text(); !strings.HasPrefix(first, compaction.SummaryPrefix) {
			t.Fatalf("a later summary started from %q, not from the previous summary", first)
		}
	}
}

// TestTokenThreshold: with an estimated-token threshold, what a call sends
// stays under it at any length.
func TestTokenThreshold(t *testing.T) {
	t.Parallel()
	const maxTokens = 200
	c := newConversation(t, compaction.WithMaxTokens(maxTokens))
	for i := range 40 {
		c.message(i)
	}
	for i, n := range c.tokens {
		if n > maxTokens {
			t.Fatalf("model call %d: about %d tokens, over %d: %q", i, n, maxTokens, c.inputs[i])
		}
	}
	if len(c.summarizer.Calls()) == 0 {
		t.Fatal("no compaction over 40 messages")
	}
}

// TestUnderThresholdPassesThrough: a call under the threshold is not
// compacted and the run's state has no view.
func TestUnderThresholdPassesThrough(t *testing.T) {
	t.Parallel()
	c := newConversation(t, compaction.WithMaxItems(100))
	for i := range 5 {
		c.message(i)
	}
	if n := len(c.summarizer.Calls()); n != 0 {
		t.Fatalf("%d summaries under the threshold, want 0", n)
	}
	if got := c.inputs[4]; !slices.Equal(got[:2], []string{"m 0", "re 0"}) {
		t.Fatalf("model input %q, want the whole history", got)
	}
}

// TestCompactionEndsTheContinuation: a run that would continue a stored
// response (which holds the input before the cut) drops the continuation
// when it compacts, so that a chaining adapter sends the compacted view.
func TestCompactionEndsTheContinuation(t *testing.T) {
	t.Parallel()
	var found []bool
	probe := pipeline.Middleware{Name: "probe", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, mc *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			_, ok, err := pipeline.ContinuationOf(mc.Turn.Run)
			if err != nil {
				return nil, err
			}
			found = append(found, ok)
			return next.Respond(ctx, mc)
		})
	}}
	r := pipeline.NewRunner(pipeline.WithMiddleware(
		compaction.Middleware(compaction.Summarize(scripted.New(scripted.Reply("short"))), compaction.WithMaxItems(3), compaction.WithKeep(1)),
		probe))
	run := state.NewRun("r", "a")
	if err := runcore.SetHistory(run, []state.Item{state.UserMessage("1"), state.AssistantMessage("", "2"), state.UserMessage("3"), state.AssistantMessage("", "4")}); err != nil {
		t.Fatal(err)
	}
	pipeline.SetContinuation(run, pipeline.Continuation{ResponseID: "resp_old", Seen: 4})
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("ok"))}
	if _, err := r.Run(context.Background(), agent, pipeline.UserInput("5"), pipeline.WithState(run)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(found, []bool{false}) {
		t.Fatalf("continuation seen by the model calls: %v, want none after the compaction", found)
	}
}

// TestSummarizeAsksWithItsInstructions: the summary model gets the head
// and the instructions, and its answer stands for the head as one
// developer message; an answer without text fails the compaction.
func TestSummarizeAsksWithItsInstructions(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply("they said hello"), scripted.Respond())
	comp := compaction.Summarize(m, compaction.WithInstructions("Be brief."))
	head := state.ItemsOf([]state.Item{state.UserMessage("hello"), state.AssistantMessage("", "hi")})
	items, err := comp.Compact(context.Background(), &pipeline.ModelCall{Agent: &pipeline.Agent{Name: "a"}}, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Kind() != state.KindSystemMessage || items[0].Text() != compaction.SummaryPrefix+"they said hello" {
		t.Fatalf("Compact = %v, want one developer message with the summary", items)
	}
	call := m.Calls()[0]
	if call.Instructions != "Be brief." || call.Input.Len() != 2 {
		t.Fatalf("the summary model got instructions %q and %d items, want %q and the head's 2", call.Instructions, call.Input.Len(), "Be brief.")
	}
	if _, err := comp.Compact(context.Background(), &pipeline.ModelCall{}, head); err == nil {
		t.Fatal("a summary without text did not fail")
	}
}

// TestCompactorErrorFailsTheCall: a compactor that fails fails the model
// call with a *compaction.Error, before the model is called, and leaves
// the run without a view.
func TestCompactorErrorFailsTheCall(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	comp := compaction.CompactorFunc(func(context.Context, *pipeline.ModelCall, state.Items) ([]state.Item, error) { return nil, boom })
	m := scripted.New(scripted.Reply("ok"))
	r := pipeline.NewRunner(pipeline.WithMiddleware(compaction.Middleware(comp, compaction.WithMaxItems(1))))
	run := state.NewRun("r", "a")
	if err := runcore.SetHistory(run, []state.Item{state.UserMessage("1"), state.AssistantMessage("", "2")}); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, pipeline.UserInput("3"), pipeline.WithState(run))
	var ce *compaction.Error
	if !errors.As(err, &ce) || !errors.Is(err, compaction.ErrCompaction) || !errors.Is(err, boom) || ce.RunID != "r" {
		t.Fatalf("Run = %v, want a *compaction.Error of run r wrapping ErrCompaction and the cause", err)
	}
	if len(m.Calls()) != 0 {
		t.Fatal("the model was called after the compaction failed")
	}
	if _, ok, _ := pipeline.ViewOf(res.State()); ok {
		t.Fatal("the failed compaction left a view")
	}
}
