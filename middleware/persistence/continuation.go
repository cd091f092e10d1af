package persistence

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// The marks of WithContinuation; the package documentation (# Continuation)
// says what they hold and how they are checked.

// Suffixes of the sessions that hold a session's marks.
const (
	tipSuffix      = "#turnkit.tip"
	boundarySuffix = "#turnkit.boundary"
)

// markType is the item type of a mark: an opaque item, never sent to a
// model.
const markType = "turnkit.mark"

// tipMark is the tip mark's JSON.
type tipMark struct {
	Type       string    `json:"type"`
	Run        string    `json:"run"`
	Seq        int64     `json:"seq"`
	Digest     string    `json:"digest"`
	ResponseID string    `json:"response_id,omitempty"`
	View       *viewMark `json:"view,omitempty"`
}

// viewMark places a boundary in the view: Tail of the session's last
// items follow the boundary's items.
type viewMark struct {
	ID   string `json:"id"`
	Tail int    `json:"tail"`
}

// boundaryMark is the boundary mark's JSON.
type boundaryMark struct {
	Type  string         `json:"type"`
	ID    string         `json:"id"`
	Items []boundaryItem `json:"items"`
}

type boundaryItem struct {
	Kind state.Kind      `json:"kind"`
	Raw  json.RawMessage `json:"raw"`
}

// itemDigest identifies a stored item: its position, kind and JSON.
func itemDigest(it state.Item) string {
	h := sha256.New()
	var b [9]byte
	binary.BigEndian.PutUint64(b[:8], uint64(it.Seq()))
	b[8] = byte(it.Kind())
	h.Write(b[:])
	h.Write(it.Raw())
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// readMark returns the last mark of the marks session msid, decoded into v.
func (h *handler) readMark(ctx context.Context, sid, msid string, v any) (bool, error) {
	items, err := h.store.List(ctx, msid, 1)
	if err != nil {
		return false, &LoadError{SessionID: msid, Err: err}
	}
	if len(items) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(items[0].Raw(), v); err != nil {
		return false, &LoadError{SessionID: msid, Err: fmt.Errorf("mark of session %q: %w", sid, err)}
	}
	return true, nil
}

// loadContinued reads the history of a run's first turn from where the
// session's marks say the conversation stands. It reports false, having
// changed nothing, when the marks do not hold for the session as it is.
func (h *handler) loadContinued(ctx context.Context, run *state.Run, sid string) (bool, error) {
	var tip tipMark
	if ok, err := h.readMark(ctx, sid, sid+tipSuffix, &tip); err != nil || !ok {
		return false, err
	}
	lastH, err := h.store.ListBefore(ctx, sid, run.ID(), session.HistoryQuery{Limit: 1})
	if err != nil {
		return false, &LoadError{SessionID: sid, RunID: run.ID(), Err: err}
	}
	if last := lastH.Items; len(last) != 1 || last[0].Seq() != tip.Seq || itemDigest(last[0]) != tip.Digest {
		return false, nil
	}
	stored, ok, err := h.store.Lookup(ctx, sid, tip.Run, tip.Seq)
	if err != nil {
		return false, &LoadError{SessionID: sid, RunID: run.ID(), Err: err}
	}
	if !ok || itemDigest(stored) != tip.Digest {
		return false, nil // another run's item, equal by chance, ends the session
	}
	var (
		head []state.Item
		hist session.History
	)
	if tip.View != nil {
		var b boundaryMark
		ok, err := h.readMark(ctx, sid, sid+boundarySuffix, &b)
		if err != nil {
			return false, err
		}
		if !ok || b.ID != tip.View.ID {
			return false, nil
		}
		if head, err = boundaryItems(&b); err != nil {
			return false, &LoadError{SessionID: sid + boundarySuffix, RunID: run.ID(), Err: err}
		}
		if tip.View.Tail > 0 {
			if hist, err = h.store.ListBefore(ctx, sid, run.ID(), session.HistoryQuery{Limit: tip.View.Tail}); err != nil {
				return false, &LoadError{SessionID: sid, RunID: run.ID(), Err: err}
			}
		}
		if len(hist.Items) != tip.View.Tail {
			return false, nil
		}
	} else {
		if hist, err = h.store.ListBefore(ctx, sid, run.ID(), session.HistoryQuery{Limit: h.cfg.limit}); err != nil {
			return false, &LoadError{SessionID: sid, RunID: run.ID(), Err: err}
		}
		if h.cfg.limit > 0 {
			hist.Items = trimOrphans(hist.Items)
		}
	}
	if err := h.setHistory(run, hist); err != nil {
		return false, err
	}
	if tip.View != nil {
		if err := pipeline.SetView(run, &pipeline.View{ID: tip.View.ID, Items: head}); err != nil {
			return false, err
		}
	}
	if tip.ResponseID != "" {
		pipeline.SetContinuation(run, pipeline.Continuation{ResponseID: tip.ResponseID, Seen: len(head) + len(hist.Items)})
	}
	return true, nil
}

// setHistory makes the items of hist the run's context, by reference
// unless WithHistoryCopied.
func (h *handler) setHistory(run *state.Run, hist session.History) error {
	if len(hist.Items) == 0 {
		return nil
	}
	if h.cfg.byRef {
		return runcore.SetSessionHistory(run, hist.Items, hist.Stamp)
	}
	return runcore.SetHistory(run, hist.Items)
}

func boundaryItems(b *boundaryMark) ([]state.Item, error) {
	out := make([]state.Item, len(b.Items))
	for i, bi := range b.Items {
		it, err := state.ParseItem(bi.Kind, bi.Raw)
		if err != nil {
			return nil, fmt.Errorf("boundary %q item %d: %w", b.ID, i, err)
		}
		out[i] = it
	}
	return out, nil
}

// writeMarks records where the conversation stands once run finished with
// every item stored: the boundary of its view, if it is new, and the tip.
// responseID is the run's last model response.
func (h *handler) writeMarks(ctx context.Context, run *state.Run, responseID string) error {
	sid := run.SessionID()
	items := run.Items()
	if items.Len() == 0 {
		return nil
	}
	last := items.At(items.Len() - 1)
	tip := tipMark{Type: markType, Run: run.ID(), Seq: last.Seq(), Digest: itemDigest(last)}
	if responseID != "" && endsRun(run, last) {
		tip.ResponseID = responseID
	}
	v, ok, err := pipeline.ViewOf(run)
	if err != nil {
		return &MarkError{SessionID: sid, RunID: run.ID(), Err: err}
	}
	// The view's tail is the session's last items only while the model
	// input is the session's history and the run's items: a handoff
	// filter that replaced the context leaves no boundary to recall.
	if ok && run.ModelInput().Len() == len(run.History())+run.Len() {
		tip.View = &viewMark{ID: v.ID, Tail: run.ModelInput().Len() - v.From}
		var b boundaryMark
		found, err := h.readMark(ctx, sid, sid+boundarySuffix, &b)
		if err != nil {
			return &MarkError{SessionID: sid, RunID: run.ID(), Err: err}
		}
		if !found || b.ID != v.ID {
			b = boundaryMark{Type: markType, ID: v.ID, Items: make([]boundaryItem, len(v.Items))}
			for i, it := range v.Items {
				b.Items[i] = boundaryItem{Kind: it.Kind(), Raw: it.Raw()}
			}
			if err := h.appendMark(ctx, sid+boundarySuffix, run.ID(), &b); err != nil {
				return &MarkError{SessionID: sid, RunID: run.ID(), Err: err}
			}
		}
	}
	if err := h.appendMark(ctx, sid+tipSuffix, run.ID(), &tip); err != nil {
		return &MarkError{SessionID: sid, RunID: run.ID(), Err: err}
	}
	return nil
}

// endsRun reports whether the run's last response, without calls, ends
// the run: the server then holds exactly what the session does.
func endsRun(run *state.Run, last state.Item) bool {
	b := run.Response()
	if b.End == 0 || b.End-1 != last.Seq() {
		return false
	}
	for seq := b.Start; seq < b.End; seq++ {
		if it, ok := run.ItemAt(seq); ok && it.Kind().IsCall() {
			return false
		}
	}
	return true
}

// appendMark replaces the mark of the marks session msid: it pops the
// last one (only the latest is ever read, so a session's marks take one
// item each) and appends v as the one item of run runID, under an ID of
// its own ("<run>#mark"), so that a session wrapper that acts on the run's
// own appends (the checkpointer's) leaves it alone. Between the two, the
// session has no mark, which the next run reads as "read the history
// whole".
func (h *handler) appendMark(ctx context.Context, msid, runID string, v any) error {
	if _, _, err := h.store.Pop(ctx, msid); err != nil {
		return err
	}
	runID += "#mark"
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	it, err := state.Opaque(raw)
	if err != nil {
		return err
	}
	return h.store.Append(ctx, msid, runID, []state.Item{it.WithSeq(1)})
}
