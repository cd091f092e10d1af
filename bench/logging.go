package bench

import (
	"fmt"

	"github.com/turnkit/turnkit/pipeline"
)

// loggingMissing says why the logging scenarios are skipped.
const loggingMissing = "middleware/logging is not in the tree yet; the chain runs without it"

// loggingMiddleware returns the logging middleware of the default chain.
func loggingMiddleware() []pipeline.Middleware { return nil }

// loggingScenario returns the logging-alone scenario.
func loggingScenario(h int) []Scenario {
	return []Scenario{{
		Name: fmt.Sprintf("middleware/logging/history=%d", h), Group: "middleware",
		Baseline: fmt.Sprintf("turn/bare/history=%d", h), PerOp: 1, Unit: "turn",
		Skip: loggingMissing,
	}}
}
