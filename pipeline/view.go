package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/state"
)

// What the model sees of a long conversation.
//
// Two records, kept in the run's state (so a checkpoint resumes with the
// exact model input the live run had), let the stages around the model
// bound what a call sends while the session keeps every item:
//
//   - a [View] (extension [ViewKey]) replaces the head of the model input
//     with fewer items, such as a summary: a compaction middleware writes
//     it, the persistence middleware recalls it from the session on the
//     next run, and the core applies it when it builds each [ModelCall], so
//     every model-stage middleware (guardrails, tracing, logging) sees what
//     the model sees;
//   - a [Continuation] (extension [ContinuationKey]) tells a model adapter
//     that keeps the conversation on its server (model/openai's
//     ChainResponses) which stored response already holds the head of the
//     model input, so that only the items after it are sent.

// ViewKey is the run extension under which a [View] is kept.
const ViewKey = "turnkit.view"

// ContinuationKey is the run extension under which a [Continuation] is
// kept.
const ContinuationKey = "turnkit.continuation"

// A View is the model's view of a run after a compaction: Items stand for
// the model input's first From items (the run's [state.Run.ModelInput]),
// so a model call sees Items followed by the model input from index From.
// ID names the compaction that made it, so a store can tell one boundary
// from the next.
//
// Covered, when set, identifies the last item Items stand for (see
// [CoveredDigest]): if the run's context is replaced under the view (a
// handoff input filter) so that this item is no longer where the view
// says, the view no longer describes the model input, and the core drops
// it: the model sees the new context whole.
type View struct {
	ID      string
	Items   []state.Item
	From    int
	Covered string
}

// CoveredDigest returns what [View].Covered holds for the model input
// in with a view from index from: a digest of in's item at from-1, or ""
// when from is 0.
func CoveredDigest(in state.Items, from int) string {
	if from <= 0 || from > in.Len() {
		return ""
	}
	it := in.At(from - 1)
	h := sha256.New()
	var b [9]byte
	binary.BigEndian.PutUint64(b[:8], uint64(it.Seq()))
	b[8] = byte(it.Kind())
	h.Write(b[:])
	h.Write(it.Raw())
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Apply returns the view of in: v.Items followed by in from index v.From.
// It fails when in is shorter than From (the run's context was replaced
// under the view), and returns in unchanged for the zero View.
func (v *View) Apply(in state.Items) (state.Items, error) {
	if v.From > in.Len() || v.From < 0 {
		return state.Items{}, fmt.Errorf("pipeline: view %q starts at model input item %d of %d", v.ID, v.From, in.Len())
	}
	if len(v.Items) == 0 && v.From == 0 {
		return in, nil
	}
	out := make([]state.Item, 0, len(v.Items)+in.Len()-v.From)
	out = append(out, v.Items...)
	for _, it := range in.From(v.From).All() {
		out = append(out, it)
	}
	return state.ItemsOf(out), nil
}

// viewJSON is the stored form of a View.
type viewJSON struct {
	ID      string     `json:"id,omitempty"`
	Items   []viewItem `json:"items"`
	From    int        `json:"from"`
	Covered string     `json:"covered,omitempty"`
}

type viewItem struct {
	Kind state.Kind      `json:"kind"`
	Raw  json.RawMessage `json:"raw"`
}

// ViewOf returns the run's view, if a compaction set one. A stored view
// that does not decode is an error that names the run.
func ViewOf(run *state.Run) (*View, bool, error) {
	raw, ok := run.Extension(ViewKey)
	if !ok {
		return nil, false, nil
	}
	v, err := parseView(run, raw)
	return v, err == nil, err
}

// parseView decodes raw, the view stored in run's extension [ViewKey].
func parseView(run *state.Run, raw json.RawMessage) (*View, error) {
	var w viewJSON
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("pipeline: run %s: extension %s: %w", run.ID(), ViewKey, err)
	}
	v := &View{ID: w.ID, From: w.From, Covered: w.Covered, Items: make([]state.Item, len(w.Items))}
	for i, wi := range w.Items {
		it, err := state.ParseItem(wi.Kind, wi.Raw)
		if err != nil {
			return nil, fmt.Errorf("pipeline: run %s: extension %s: items[%d]: %w", run.ID(), ViewKey, i, err)
		}
		v.Items[i] = it
	}
	return v, nil
}

// SetView records v as the run's view (a nil v removes it). The items are
// stored by their kind and canonical JSON; positions are not kept.
func SetView(run *state.Run, v *View) error {
	if v == nil {
		run.SetExtension(ViewKey, nil)
		return nil
	}
	w := viewJSON{ID: v.ID, From: v.From, Covered: v.Covered, Items: make([]viewItem, len(v.Items))}
	for i, it := range v.Items {
		w.Items[i] = viewItem{Kind: it.Kind(), Raw: it.Raw()}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("pipeline: run %s: set view: %w", run.ID(), err)
	}
	run.SetExtension(ViewKey, b)
	return nil
}

// A Continuation says that the model's server holds a stored response,
// ResponseID, whose conversation covers the first Seen items of the run's
// first model call's input: a model adapter that chains responses sends
// previous_response_id and only the items after them. The persistence
// middleware sets it when the session remembers the last response of the
// run before (see its WithContinuation option).
type Continuation struct {
	ResponseID string `json:"response_id"`
	Seen       int    `json:"seen"`
}

// ContinuationOf returns the run's continuation, if one was set.
func ContinuationOf(run *state.Run) (Continuation, bool, error) {
	raw, ok := run.Extension(ContinuationKey)
	if !ok {
		return Continuation{}, false, nil
	}
	var c Continuation
	if err := json.Unmarshal(raw, &c); err != nil {
		return Continuation{}, false, fmt.Errorf("pipeline: run %s: extension %s: %w", run.ID(), ContinuationKey, err)
	}
	return c, c.ResponseID != "", nil
}

// SetContinuation records c as the run's continuation; the zero
// Continuation removes it.
func SetContinuation(run *state.Run, c Continuation) {
	if c.ResponseID == "" {
		run.SetExtension(ContinuationKey, nil)
		return
	}
	b, _ := json.Marshal(c) // a string and an int always marshal
	run.SetExtension(ContinuationKey, b)
}

// applyView makes c see the run's view, raw, the run's extension
// [ViewKey] (read with c's input: runcore.ModelInputAnd). A view whose
// covered item moved (the context was replaced under it) is dropped.
func applyView(c *ModelCall, raw json.RawMessage) error {
	v, err := parseView(c.Turn.Run, raw)
	if err != nil {
		return err
	}
	if v.Covered != "" && CoveredDigest(c.Input, v.From) != v.Covered {
		c.Turn.Run.SetExtension(ViewKey, nil)
		return nil
	}
	in, err := v.Apply(c.Input)
	if err != nil {
		return fmt.Errorf("pipeline: run %s: %w", c.Turn.Run.ID(), err)
	}
	c.Input = in
	return nil
}
