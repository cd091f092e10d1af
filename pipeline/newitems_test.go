package pipeline_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// seqKinds lists items as "seq:kind".
func seqKinds(items []state.Item) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, strconv.FormatInt(it.Seq(), 10)+":"+it.Kind().String())
	}
	return out
}

// A run's result lists what it recorded, and a resume's result what the
// resume recorded: the outputs it gave the paused response's calls, below
// where the resume started, and the items after them, in position order,
// never the items of the invocation before it.
func TestNewItemsOfRunAndResume(t *testing.T) {
	t.Parallel()
	sc := newScenario(1, false)
	r := newRunner(false)
	first, err := r.Run(context.Background(), sc.agent, pipeline.UserInput("clean up"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:user_message", "2:tool_call", "3:tool_call", "4:tool_output"}
	if got := seqKinds(first.NewItems()); !slices.Equal(got, want) {
		t.Fatalf("the run's new items are %q, want %q", got, want)
	}
	st := first.State()
	if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	second, err := r.Resume(context.Background(), sc.agent, st)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"5:tool_output", "6:assistant_message"}
	if got := seqKinds(second.NewItems()); !slices.Equal(got, want) {
		t.Errorf("the resume's new items are %q, want %q", got, want)
	}
	if got := seqKinds(first.NewItems()); len(got) != 4 {
		t.Errorf("the first result's new items became %q after the resume", got)
	}
}

// A resume of a run paused on its response's only call lists the output
// it gave that call, at the position reserved below where the resume's
// own items begin, then what followed, live and from a checkpoint; the
// paused run's result keeps its own.
func TestNewItemsOfResumeOfLoneCall(t *testing.T) {
	t.Parallel()
	for _, decoded := range []bool{false, true} {
		c := &calls{}
		agent := &pipeline.Agent{Name: "worker", Tools: []pipeline.Tool{c.tool("danger")},
			Model: scripted.New(scripted.CallTool("danger", `{"path":"/tmp/x"}`), scripted.Reply("done"))}
		r := newRunner(false)
		first, err := r.Run(context.Background(), agent, pipeline.UserInput("clean up"))
		if err != nil {
			t.Fatal(err)
		}
		st := first.State()
		if decoded {
			data, err := state.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			if st, err = state.Unmarshal(data); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
			t.Fatal(err)
		}
		second, err := r.Resume(context.Background(), agent, st)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"3:tool_output", "4:assistant_message"}
		if got := seqKinds(second.NewItems()); !slices.Equal(got, want) {
			t.Errorf("decoded %v: the resume's new items are %q, want %q", decoded, got, want)
		}
		want = []string{"1:user_message", "2:tool_call"}
		if got := seqKinds(first.NewItems()); !slices.Equal(got, want) {
			t.Errorf("decoded %v: the paused run's new items are %q, want %q", decoded, got, want)
		}
	}
}

// An input withheld by a guardrail's ruling is not among the result's new
// items, as it is not in the run's state.
func TestNewItemsLeaveWithheldInputOut(t *testing.T) {
	t.Parallel()
	withhold := pipeline.Middleware{Name: "withhold", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			if c.Turn.Number == 1 {
				if err := c.Turn.WithholdInput(nil); err != nil {
					return nil, err
				}
			}
			return next.Respond(ctx, c)
		})
	}}
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("done"))}
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(withhold)).Run(context.Background(), agent, pipeline.UserInput("secret"))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.NewItems() {
		if it.Text() == "secret" {
			t.Errorf("the withheld input is among the new items: %v", it)
		}
	}
	if got := seqKinds(res.NewItems()); !slices.Equal(got, []string{"2:assistant_message"}) {
		t.Errorf("new items %q, want the answer alone", got)
	}
}
