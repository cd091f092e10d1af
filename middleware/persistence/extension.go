package persistence

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// extensionKey is the [state.Run] extension under which persistence keeps
// what a resume needs beyond the session watermark. It is absent in the
// common case, and written only when a turn ends without committing all of
// its items: a rejected or cancelled turn's model output that must never
// be stored, and the decision of a turn whose last commit failed.
const extensionKey = "turnkit.persistence"

// extState is the JSON kept under extensionKey.
type extState struct {
	// Version is the format's version, 1.
	Version int `json:"version"`
	// Excluded lists positions that are never to be stored: model output
	// discarded after a tripwire or a cancellation.
	Excluded []int64 `json:"excluded,omitempty"`
	// Withheld lists output positions stored with [WithheldOutput] instead
	// of the tool's output.
	Withheld []int64 `json:"withheld,omitempty"`
	// Next is the decision of a turn whose final commit failed; resume
	// replays it once the commit is complete.
	Next *savedNext `json:"next,omitempty"`
}

type savedNext struct {
	Kind   string `json:"kind"` // "final_output" or "handoff"
	Output string `json:"output,omitempty"`
	Agent  string `json:"agent,omitempty"`
}

const extVersion = 1

func (e *extState) empty() bool {
	return len(e.Excluded) == 0 && len(e.Withheld) == 0 && e.Next == nil
}

func (e *extState) excluded(seq int64) bool { return slices.Contains(e.Excluded, seq) }
func (e *extState) withheld(seq int64) bool { return slices.Contains(e.Withheld, seq) }

// prune forgets positions at or below the watermark: they are settled.
func (e *extState) prune(watermark int64) bool {
	n := len(e.Excluded) + len(e.Withheld)
	below := func(s int64) bool { return s <= watermark }
	e.Excluded = slices.DeleteFunc(e.Excluded, below)
	e.Withheld = slices.DeleteFunc(e.Withheld, below)
	return n != len(e.Excluded)+len(e.Withheld)
}

func loadExt(run *state.Run) (extState, error) {
	raw, ok := run.Extension(extensionKey)
	if !ok {
		return extState{}, nil
	}
	var e extState
	if err := json.Unmarshal(raw, &e); err != nil {
		return extState{}, &StateError{RunID: run.ID(), Err: err}
	}
	if e.Version != extVersion {
		return extState{}, &StateError{RunID: run.ID(), Err: fmt.Errorf("version %d, want %d", e.Version, extVersion)}
	}
	if e.Next != nil && e.Next.Kind != pipeline.NextFinalOutput.String() && e.Next.Kind != pipeline.NextHandoff.String() {
		return extState{}, &StateError{RunID: run.ID(), Err: fmt.Errorf("next step %q cannot be replayed", e.Next.Kind)}
	}
	return e, nil
}

func saveExt(run *state.Run, e *extState) error {
	if e.empty() {
		run.SetExtension(extensionKey, nil)
		return nil
	}
	e.Version = extVersion
	raw, err := json.Marshal(e)
	if err != nil {
		return &StateError{RunID: run.ID(), Err: err}
	}
	run.SetExtension(extensionKey, raw)
	return nil
}
