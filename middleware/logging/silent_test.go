package logging_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// A logger that writes nothing (zap.NewNop) costs the turn, model and
// tool stages a level read: none of them reads the clock, whatever the
// number of turns; only the run stage does, once.
func TestSilentLoggerStagesReadNothing(t *testing.T) {
	t.Parallel()
	readings := 0
	clock := func() time.Time { readings++; return time.Unix(0, 0) }
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(zap.NewNop(), logging.WithClock(clock))))
	a := agent(scripted.CallTool("echo", `{}`), scripted.CallTool("echo", `{}`), scripted.Reply("done"))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if readings != 1 {
		t.Errorf("a three-turn run on zap.NewNop read the clock %d times, want once (the run's start)", readings)
	}
}

// A logger whose level changes while the run goes on is followed from the
// next stage on: a level raised from nothing to debug by a tool logs the
// turns that come after it.
func TestSilentLoggerFollowsItsLevel(t *testing.T) {
	t.Parallel()
	level := zap.NewAtomicLevelAt(zapcore.InvalidLevel)
	core, logs := observer.New(level)
	wake := pipeline.NewTool(pipeline.ToolSpec{Name: "wake"}, func(context.Context, json.RawMessage) (string, error) {
		level.SetLevel(zap.DebugLevel)
		return "awake", nil
	})
	a := &pipeline.Agent{Name: "helper", Model: scripted.New(scripted.CallTool("wake", `{}`), scripted.Reply("done")),
		Tools: []pipeline.Tool{wake}}
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(zap.New(core))))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var turns []any
	for _, e := range logs.FilterMessage("turn finished").AllUntimed() {
		turns = append(turns, e.ContextMap()["turn"])
	}
	if len(turns) != 1 || turns[0] != int64(2) {
		t.Errorf("turns logged %v, want the second alone (the first started silent)", turns)
	}
	if n := logs.FilterMessage("model call").Len(); n != 1 {
		t.Errorf("%d model calls logged, want the second turn's", n)
	}
}
