package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// gatedTool returns a tool that answers only once gate is closed, or
// "gave up" after a while.
func gatedTool(name string, gate <-chan struct{}) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(ctx context.Context, _ json.RawMessage) (string, error) {
		select {
		case <-gate:
			return name + " done", nil
		case <-time.After(2 * time.Second):
			return "gave up", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}

func toolEventAgent(gate <-chan struct{}) *pipeline.Agent {
	return &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{gatedTool("slow", gate), echo("fast")}, Model: scripted.New(
		scripted.Respond(scripted.Call("slow", `1`), scripted.Call("fast", `2`)),
		scripted.Reply("both done"),
	)}
}

// TestToolEventsAsTheyHappen streams a response with a slow call and a
// fast one: the fast call's start and end events, with its output, come
// while the slow call still runs (the slow tool waits for them), and the
// items keep their order in the state and the result, the same as a plain
// run's (issue 13, item 8).
func TestToolEventsAsTheyHappen(t *testing.T) {
	gate := make(chan struct{})
	r := pipeline.NewRunner()
	var (
		log       []string
		ended     = map[string]pipeline.ToolCallEnded{}
		streamRes *pipeline.Result
	)
	for ev, err := range r.Stream(context.Background(), toolEventAgent(gate), pipeline.UserInput("go"), pipeline.WithRunID("run_ev")) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case pipeline.ToolCallStarted:
			log = append(log, "start "+e.Tool+" "+e.Arguments)
			if e.Turn != 1 {
				t.Errorf("ToolCallStarted %s: turn %d, want 1", e.Tool, e.Turn)
			}
		case pipeline.ToolCallEnded:
			log = append(log, "end "+e.Tool+" "+e.Status.String()+" "+e.Output.Text())
			ended[e.Tool] = e
			if e.Tool == "fast" {
				close(gate) // the slow tool answers only now
			}
		case pipeline.ItemCreated:
			if e.Item.Kind() == state.KindToolOutput {
				log = append(log, "item "+e.Item.Text())
			}
		case pipeline.RunCompleted:
			streamRes = e.Result
		}
	}
	// The calls start concurrently, so only these orders are fixed: each
	// call starts before it ends, the fast call ends first (the slow one
	// waits for that), and the outputs are recorded afterwards, in call
	// order.
	at := func(line string) int {
		i := slices.Index(log, line)
		if i < 0 {
			t.Errorf("no event %q in %q", line, log)
		}
		return i
	}
	startSlow, startFast := at("start slow 1"), at("start fast 2")
	endFast, endSlow := at("end fast completed fast(2)"), at("end slow completed slow done")
	itemSlow, itemFast := at("item slow done"), at("item fast(2)")
	if len(log) != 6 || !(startSlow < endSlow && startFast < endFast && endFast < endSlow && endSlow < itemSlow && itemSlow < itemFast) {
		t.Errorf("tool events in the wrong order: %q", log)
	}
	if fast, slow := ended["fast"], ended["slow"]; fast.CallID == slow.CallID || fast.Output.CallID() != fast.CallID {
		t.Errorf("ended events: fast %+v, slow %+v", fast, slow)
	} else if slow.Output.Seq() != fast.Output.Seq()-1 || slow.Duration <= 0 {
		t.Errorf("slow output at %d, fast at %d, slow took %v: want the reserved positions, call order, a duration",
			slow.Output.Seq(), fast.Output.Seq(), slow.Duration)
	}
	if streamRes == nil {
		t.Fatal("no RunCompleted")
	}

	open := make(chan struct{})
	close(open)
	res, err := r.Run(context.Background(), toolEventAgent(open), pipeline.UserInput("go"), pipeline.WithRunID("run_ev"))
	if err != nil {
		t.Fatal(err)
	}
	wantItems := []string{"user_message:go", "tool_call:1", "tool_call:2", "tool_output:slow done", "tool_output:fast(2)", "assistant_message:both done"}
	if diff := cmp.Diff(wantItems, texts(streamRes.NewItems())); diff != "" {
		t.Errorf("streamed items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(views(res.NewItems()), views(streamRes.NewItems())); diff != "" {
		t.Errorf("items (-run +stream):\n%s", diff)
	}
	if diff := cmp.Diff(views(res.State().Items().Slice()), views(streamRes.State().Items().Slice())); diff != "" {
		t.Errorf("state (-run +stream):\n%s", diff)
	}
}

// TestToolEventsStatus: a pending call and a failed tool stage end with
// their status, a failure with the error that ends the run; every start
// has its end.
func TestToolEventsStatus(t *testing.T) {
	diskFull := errors.New("disk full")
	r := pipeline.NewRunner(pipeline.WithToolConcurrency(1), pipeline.WithMiddleware(holdTool("wait")))
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("wait"), failing("f", diskFull)}, Model: scripted.New(
		scripted.Respond(scripted.Call("wait", `{}`), scripted.Call("f", `{}`)),
		scripted.Reply("done"),
	)}
	var started, ended []string
	for ev, err := range r.Stream(context.Background(), agent, pipeline.UserInput("go")) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case pipeline.ToolCallStarted:
			started = append(started, e.Tool)
		case pipeline.ToolCallEnded:
			s := e.Tool + " " + e.Status.String() + " " + e.Output.Text()
			if e.Err != nil {
				s += " err " + e.Err.Error()
			}
			ended = append(ended, s)
		}
	}
	if diff := cmp.Diff([]string{"wait", "f"}, started); diff != "" {
		t.Errorf("started (-want +got):\n%s", diff)
	}
	wantEnded := []string{"wait pending ", "f completed An error occurred while running the tool. Please try again. Error: disk full err disk full"}
	if diff := cmp.Diff(wantEnded, ended); diff != "" {
		t.Errorf("ended (-want +got):\n%s", diff)
	}

	abort := pipeline.NewRunner(pipeline.WithToolErrorsAbort())
	agent = &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{failing("f", diskFull)}, Model: scripted.New(scripted.CallTool("f", `{}`))}
	var last pipeline.ToolCallEnded
	var runErr error
	for ev, err := range abort.Stream(context.Background(), agent, pipeline.UserInput("go")) {
		if err != nil {
			runErr = err
			continue
		}
		if e, ok := ev.(pipeline.ToolCallEnded); ok {
			last = e
		}
	}
	if !errors.Is(runErr, diskFull) {
		t.Fatalf("run error %v, want disk full", runErr)
	}
	if last.Tool != "f" || last.Status != 0 || !errors.Is(last.Err, diskFull) || !last.Output.IsZero() {
		t.Errorf("ToolCallEnded of the failed stage = %+v, want status 0, the error, no output", last)
	}
}
