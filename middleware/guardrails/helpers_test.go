package guardrails_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// modes are the two ways to run: the same loop, with and without a sink.
var modes = []struct {
	name   string
	stream bool
}{{"plain", false}, {"streamed", true}}

// outcome is what a run came to.
type outcome struct {
	state  *state.Run // the live state the run recorded into
	final  string
	err    error
	deltas int // text deltas a streamed run yielded
}

// runOnce runs agent on a user message, streamed or not, recording into a
// state the test keeps.
func runOnce(t *testing.T, r *pipeline.Runner, a *pipeline.Agent, stream bool, input string) outcome {
	t.Helper()
	st := state.NewRun("run_test", a.Name)
	out := outcome{state: st}
	if !stream {
		res, err := r.Run(context.Background(), a, pipeline.UserInput(input), pipeline.WithState(st))
		out.err = err
		if res != nil {
			out.final = res.FinalOutput()
		}
		return out
	}
	res, events, err := pipelinetest.Drain(r.Stream(context.Background(), a, pipeline.UserInput(input), pipeline.WithState(st)))
	out.err = err
	if err == nil && res != nil {
		out.final = res.FinalOutput()
	}
	for _, ev := range events {
		if _, ok := ev.(pipeline.TextDelta); ok {
			out.deltas++
		}
	}
	return out
}

// resumeOnce resumes st, streamed or not.
func resumeOnce(t *testing.T, r *pipeline.Runner, a *pipeline.Agent, stream bool, st *state.Run) outcome {
	t.Helper()
	out := outcome{state: st}
	if !stream {
		res, err := r.Resume(context.Background(), a, st)
		out.err = err
		if res != nil {
			out.final = res.FinalOutput()
		}
		return out
	}
	res, _, err := pipelinetest.Drain(r.ResumeStream(context.Background(), a, st))
	out.err = err
	if err == nil && res != nil {
		out.final = res.FinalOutput()
	}
	return out
}

// counter is a tool that counts its calls and echoes its arguments.
type counter struct{ n atomic.Int64 }

func (c *counter) tool(name string) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(ctx context.Context, args json.RawMessage) (string, error) {
		c.n.Add(1)
		return "ran " + name + " " + string(args), nil
	})
}

// kinds lists the item kinds of a state, in position order.
func kinds(st *state.Run) []string {
	var out []string
	for _, it := range st.Items().All() {
		out = append(out, it.Kind().String())
	}
	return out
}

// checkErr reports a mismatch between err and want (nil means no error).
func checkErr(t *testing.T, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

var errBroken = errors.New("classifier unavailable")

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// keeps are the two ways a test keeps a state across a failure: the live
// state, and a JSON round trip through state.Marshal and state.Unmarshal.
var keeps = []struct {
	name string
	keep func(tb testing.TB, st *state.Run) *state.Run
}{
	{"live", func(_ testing.TB, st *state.Run) *state.Run { return st }},
	{"json", pipelinetest.RoundTrip},
}

// newStore returns a session/memory store closed when the test ends.
func newStore(t *testing.T) *memory.Store {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	return store
}
