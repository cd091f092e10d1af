package scripted_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/turnkit/turnkit/model/modeltest"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// TestConformance runs the model conformance suite on scripted models
// built from each case's turns.
func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		New: func(t *testing.T, c *modeltest.Case, _ *modeltest.Server) pipeline.Model {
			steps := make([]scripted.Step, len(c.Turns))
			for i, turn := range c.Turns {
				steps[i] = stepOf(turn)
			}
			return scripted.New(steps...)
		},
	})
}

// stepOf returns the scripted step that answers as turn does.
func stepOf(turn modeltest.Turn) scripted.Step {
	if e := turn.Err; e != nil {
		retry := e.Status == http.StatusTooManyRequests || e.Status >= http.StatusInternalServerError
		return scripted.Fail(&pipeline.ModelError{Status: e.Status, RequestID: e.RequestID, Retryable: retry, Err: errors.New(e.Message)})
	}
	var parts []scripted.Part
	switch {
	case turn.Refusal != "":
		parts = append(parts, scripted.Refuse(turn.Refusal))
	case turn.Text != "":
		parts = append(parts, scripted.Text(turn.Text))
	}
	for _, c := range turn.Calls {
		parts = append(parts, scripted.Call(c.Name, c.Arguments))
	}
	return scripted.Respond(parts...).WithUsage(turn.Usage)
}
