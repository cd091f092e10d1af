package inspect

import (
	"context"
	"html/template"
	"regexp"
	"strings"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A row of a timeline: an item, and for a call the output that answers it
// on the same page.
type row struct {
	Item   itemView
	Output *itemView
	Notes  []note // what the run's checkpoint recorded here
}

// itemView is an item as a page shows it.
type itemView struct {
	RunID  string
	Place  int64
	Seq    int64
	Kind   string
	Name   string
	CallID string
	Text   string // redacted
	Hosted bool   // a hosted call: Text is its status
	Parts  []partView
}

// partView is a content part as a page shows it.
type partView struct {
	Type     string
	Text     string       // a text part's text, redacted
	Image    template.URL // an inline image (a data:image URL), shown
	URL      string       // another image or file URL: named, not loaded
	FileID   string
	FileName string
}

// inlineImage matches the data URLs of images a page may show inline.
var inlineImage = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$`)

func (h *Handler) itemView(e session.Entry) itemView {
	it := e.Item
	v := itemView{RunID: e.RunID, Place: e.Place, Seq: it.Seq(), Kind: it.Kind().String(), Name: it.Name(),
		CallID: it.CallID(), Text: h.cfg.redact(it.Text()), Hosted: it.Kind() == state.KindHostedCall}
	for _, p := range it.Content() {
		pv := partView{Type: p.Type(), Text: h.cfg.redact(p.Text()), FileID: p.FileID()}
		name, data := p.FileData()
		pv.FileName = name
		u := p.URL()
		if data != "" && u == "" {
			u = data
		}
		if p.Type() == "input_image" && inlineImage.MatchString(u) {
			pv.Image = template.URL(u) // checked above: a base64 image, nothing else
		} else if !strings.HasPrefix(u, "data:") {
			pv.URL = u
		}
		v.Parts = append(v.Parts, pv)
	}
	return v
}

// rows pairs each call on the page with the output that answers it on
// the page (the first output of its run with its call ID after it);
// everything else is a row of its own, in order.
func (h *Handler) rows(entries []session.Entry) []row {
	type key struct{ run, call string }
	answered := make(map[int]bool)
	var out []row
	for i, e := range entries {
		if answered[i] {
			continue
		}
		r := row{Item: h.itemView(e)}
		if k := e.Item.Kind(); k.IsCall() && e.Item.CallID() != "" {
			want := key{e.RunID, e.Item.CallID()}
			for j := i + 1; j < len(entries); j++ {
				o := entries[j]
				if o.Item.Kind().IsOutput() && !answered[j] && (key{o.RunID, o.Item.CallID()}) == want {
					v := h.itemView(o)
					r.Output, answered[j] = &v, true
					break
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// runView is a run's page's.
type runView struct {
	ID        string
	SessionID string
	Agent     string
	Turn      int
	MaxTurns  int
	Version   int64
	Status    string
	Final     string
	Finished  bool
	Pending   []approvalView
	Decisions []state.Decision
	Guards    []guardView
	Usage     state.Usage
	TraceID   string
	TraceURL  string
	Verified  string // "": not checked; "verified"; or why not
}

type approvalView struct {
	state.Approval
	Decided string // the verdict recorded on it, if any
}

type guardView struct {
	state.GuardrailResult
	Stage string
	Info  string
}

// traceparent matches a W3C traceparent header: version, trace ID, span
// ID, flags.
var traceparent = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$`)

func (h *Handler) runView(ctx context.Context, run *state.Run) runView {
	final, finished := run.FinalOutput()
	v := runView{ID: run.ID(), SessionID: run.SessionID(), Agent: run.Agent(), Turn: run.Turn(), MaxTurns: run.MaxTurns(),
		Version: run.Version(), Status: run.Status().String(), Final: h.cfg.redact(final), Finished: finished, Usage: run.Usage()}
	for _, a := range run.Pending() {
		a.Arguments = h.cfg.redact(a.Arguments)
		av := approvalView{Approval: a}
		if a.IsElicitation() {
			// An MCP server's request for input: answered with an action,
			// not approved; the page shows the request.
			if d, ok := run.DecisionOn(a); ok {
				av.Decided = d.Answer.Action.String()
			}
			av.Elicitation.Message, av.Elicitation.Schema = h.cfg.redact(a.Elicitation.Message), h.cfg.redact(a.Elicitation.Schema)
		} else if d, exact, ok := run.DecisionFor(a.Tool, a.CallID); ok {
			av.Decided = d.Verdict.String()
			if !exact {
				av.Decided += " (always)"
			}
		}
		v.Pending = append(v.Pending, av)
	}
	for _, d := range run.Decisions() {
		d.Message = h.cfg.redact(d.Message)
		v.Decisions = append(v.Decisions, d)
	}
	for _, g := range run.GuardrailResults() {
		g.Message = h.cfg.redact(g.Message)
		v.Guards = append(v.Guards, guardView{GuardrailResult: g, Stage: g.Stage.String(), Info: h.cfg.redact(string(g.Info))})
	}
	if m := traceparent.FindStringSubmatch(run.TraceContext()["traceparent"]); m != nil {
		v.TraceID = m[1]
		if h.cfg.traceURL != "" {
			v.TraceURL = strings.ReplaceAll(h.cfg.traceURL, "{trace_id}", m[1])
		}
	}
	if h.cfg.verify != nil {
		if _, err := h.cfg.verify.Load(ctx, run.ID()); err != nil {
			v.Verified = "does not verify: " + err.Error()
		} else {
			v.Verified = "verified"
		}
	}
	return v
}
