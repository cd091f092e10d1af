package compaction

import (
	"context"
	"errors"
	"strings"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// SummaryInstructions are the instructions [Summarize] gives its model by
// default.
const SummaryInstructions = "Summarize the conversation so far for the assistant that continues it. " +
	"Keep every fact, decision, name, number and open question the rest of the conversation may need; " +
	"drop pleasantries. Write the summary only."

// SummaryPrefix begins the message that carries a summary.
const SummaryPrefix = "Summary of the conversation so far:\n"

// Summarize returns a [Compactor] that asks model for a summary of the
// head, with [SummaryInstructions] and the model settings of the call
// being compacted, and stands it for the head as one developer message
// that begins with [SummaryPrefix]. Any [pipeline.Model] does: the
// agent's own, a cheaper one, Chat Completions, the scripted model. The
// summary call's usage is the summarizer's, not the run's. Summarize
// panics if model is nil.
func Summarize(model pipeline.Model, opts ...SummaryOption) Compactor {
	if model == nil {
		panic("compaction: Summarize called with a nil Model")
	}
	s := &summarizer{model: model, instructions: SummaryInstructions}
	for _, o := range opts {
		if o != nil {
			o.applySummary(s)
		}
	}
	return s
}

// A SummaryOption configures [Summarize].
type SummaryOption interface{ applySummary(*summarizer) }

type summaryOptionFunc func(*summarizer)

func (f summaryOptionFunc) applySummary(s *summarizer) { f(s) }

// WithInstructions replaces [SummaryInstructions], the default; an empty
// text is ignored, and a later call replaces an earlier one.
func WithInstructions(text string) SummaryOption {
	return summaryOptionFunc(func(s *summarizer) {
		if text != "" {
			s.instructions = text
		}
	})
}

type summarizer struct {
	model        pipeline.Model
	instructions string
}

// errNoSummary means the summarizer answered without text.
var errNoSummary = errors.New("the summary model answered without text")

// Compact asks the model for a summary of head.
func (s *summarizer) Compact(ctx context.Context, c *pipeline.ModelCall, head state.Items) ([]state.Item, error) {
	agent := &pipeline.Agent{Name: "compaction", Instructions: s.instructions, Model: s.model}
	if c.Agent != nil {
		agent.Settings = c.Agent.Settings
	}
	// The call belongs to no turn: it must not continue, nor advance, the
	// run's server-side conversation.
	call := &pipeline.ModelCall{
		Agent: agent, Instructions: s.instructions, Input: head, Settings: agent.Settings,
	}
	resp, err := s.model.Respond(ctx, call)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, it := range resp.Items {
		if it.Kind() == state.KindAssistantMessage {
			b.WriteString(it.Text())
		}
	}
	if b.Len() == 0 {
		return nil, errNoSummary
	}
	return []state.Item{state.SystemMessage(SummaryPrefix + b.String())}, nil
}
