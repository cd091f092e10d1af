package inspect

import (
	"context"
	"fmt"
)

// A note is what a run's checkpoint says at a place of the timeline: a
// model call and its usage, a guardrail verdict, an approval decision.
type note struct {
	Class string // "usage", "guardrail", "decision"
	Text  string // redacted when it quotes content
}

// annotate puts beside the rows of the page what the checkpoints of their
// runs recorded there: each model call's usage at the response's first
// item, each guardrail verdict at the call it checked (or at its turn's
// response, or the run's first row), each decision at its call. It reads
// one checkpoint per run on the page; a run without one (deleted by a
// retention, say) gets no notes.
func (h *Handler) annotate(ctx context.Context, rows []row) {
	type place struct {
		run string
		seq int64
	}
	at := make(map[place]int)
	callAt := make(map[[2]string]int)
	first := make(map[string]int)
	for i, r := range rows {
		id := r.Item.RunID
		if id == "" {
			continue
		}
		if _, ok := first[id]; !ok {
			first[id] = i
		}
		at[place{id, r.Item.Seq}] = i
		if r.Item.CallID != "" {
			callAt[[2]string{id, r.Item.CallID}] = i
		}
	}
	for id, firstRow := range first {
		run, err := h.runs.Load(ctx, id)
		if err != nil {
			continue
		}
		turnRow := make(map[int]int)
		for _, c := range run.ModelCalls() {
			i, ok := at[place{id, c.Seq}]
			if !ok {
				continue
			}
			turnRow[c.Turn] = i
			text := fmt.Sprintf("model call, turn %d, agent %s", c.Turn, c.Agent)
			if c.Model != "" {
				text += ", model " + c.Model
			}
			if c.ResponseID != "" {
				text += ", response " + c.ResponseID
			}
			text += fmt.Sprintf(": %d input tokens (%d cached), %d output (%d reasoning)",
				c.Usage.InputTokens, c.Usage.CachedTokens, c.Usage.OutputTokens, c.Usage.ReasoningTokens)
			rows[i].Notes = append(rows[i].Notes, note{Class: "usage", Text: text})
		}
		for _, g := range run.GuardrailResults() {
			i, ok := callAt[[2]string{id, g.CallID}]
			if !ok {
				if i, ok = turnRow[g.Turn]; !ok {
					i = firstRow
				}
			}
			verdict := "passed"
			if g.Tripped {
				verdict = "tripped"
			}
			rows[i].Notes = append(rows[i].Notes, note{Class: "guardrail",
				Text: fmt.Sprintf("guardrail %s (%s, turn %d): %s", g.Name, g.Stage, g.Turn, verdict)})
		}
		for _, d := range run.Decisions() {
			i, ok := callAt[[2]string{id, d.CallID}]
			if !ok {
				continue
			}
			text := fmt.Sprintf("decision on %s: %s", d.Tool, d.Verdict)
			if d.Message != "" {
				text += ": " + h.cfg.redact(d.Message)
			}
			rows[i].Notes = append(rows[i].Notes, note{Class: "decision", Text: text})
		}
	}
}
