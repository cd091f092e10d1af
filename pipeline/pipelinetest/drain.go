package pipelinetest

import (
	"errors"
	"iter"

	"github.com/turnkit/turnkit/pipeline"
)

// Drain consumes a run's stream, from [pipeline.Runner.Stream] or
// [pipeline.Runner.ResumeStream], to its end, so a test can run the same
// case plainly and streamed and compare. It returns the events the stream
// yielded before its last value, the [pipeline.RunCompleted] event's
// result, and the stream's error. When the stream ends with an error, res
// is the one a [*pipeline.RunError] carries, which is what
// [pipeline.Runner.Run] returns beside the same error, or nil for an error
// before the run started.
func Drain(stream iter.Seq2[pipeline.Event, error]) (res *pipeline.Result, events []pipeline.Event, err error) {
	for ev, e := range stream {
		if e != nil {
			err = e
			continue
		}
		if done, ok := ev.(pipeline.RunCompleted); ok {
			res = done.Result
			continue
		}
		events = append(events, ev)
	}
	if re, ok := errors.AsType[*pipeline.RunError](err); ok && res == nil {
		res = re.Result()
	}
	return res, events, err
}
