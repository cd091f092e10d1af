package scenario

import (
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/pipeline"
)

// loggingMiddleware returns the logging middleware of the default chain:
// zap.NewNop(), payloads off (the default).
func loggingMiddleware() []pipeline.Middleware {
	return []pipeline.Middleware{logging.Middleware(zap.NewNop())}
}

// loggingScenario returns the logging-alone scenario at h items of history.
func loggingScenario(h int) []Scenario {
	hist := makeHistory(h)
	s := stack{name: "logging", mws: func(_ *memoryStore) []pipeline.Middleware { return loggingMiddleware() }}
	return []Scenario{{
		Name: fmt.Sprintf("middleware/logging/history=%d", h), Group: "middleware",
		Baseline: fmt.Sprintf("turn/bare/history=%d", h), PerOp: 1, Unit: "turn",
		Bench: func(b *testing.B) { s.turns(b, hist) },
	}}
}
