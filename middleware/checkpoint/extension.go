package checkpoint

import (
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/state"
)

// extensionKey is the key of the checkpointer's record in a run's state
// ([state.Run.Extension]).
const extensionKey = "turnkit.checkpoint"

// extState is the checkpointer's record in a run's state: the final
// commit of a finished run, from the save before it is made until it is
// known to have landed.
type extState struct {
	Commit *commit `json:"commit,omitempty"`
}

type commit struct {
	Session string       `json:"session"`
	Items   []commitItem `json:"items"`
}

type commitItem struct {
	Seq  int64      `json:"seq"`
	Kind state.Kind `json:"kind"`
	// Name is an output's tool name, which its raw JSON does not carry
	// (the session stores it, and compares it on a repeated append).
	Name string          `json:"name,omitempty"`
	Raw  json.RawMessage `json:"raw"`
}

// setCommit records the final commit of run: the items about to be
// appended to the session, exactly as they will be stored.
func setCommit(run *state.Run, sessionID string, items []state.Item) error {
	cm := &commit{Session: sessionID, Items: make([]commitItem, len(items))}
	for i, it := range items {
		cm.Items[i] = commitItem{Seq: it.Seq(), Kind: it.Kind(), Raw: it.Raw()}
		if it.Kind().IsOutput() {
			cm.Items[i].Name = it.Name()
		}
	}
	data, err := json.Marshal(extState{Commit: cm})
	if err != nil {
		return fmt.Errorf("checkpoint: record the final commit of run %s: %w", run.ID(), err)
	}
	run.SetExtension(extensionKey, data)
	return nil
}

func clearCommit(run *state.Run) { run.SetExtension(extensionKey, nil) }

// loadCommit returns the final commit recorded in run, if any, with its
// items rebuilt.
func loadCommit(run *state.Run) (sessionID string, items []state.Item, ok bool, err error) {
	raw, found := run.Extension(extensionKey)
	if !found {
		return "", nil, false, nil
	}
	var ext extState
	if err := json.Unmarshal(raw, &ext); err != nil {
		return "", nil, false, fmt.Errorf("checkpoint: run %s extension %q: %w", run.ID(), extensionKey, err)
	}
	if ext.Commit == nil || len(ext.Commit.Items) == 0 {
		return "", nil, false, nil
	}
	items = make([]state.Item, len(ext.Commit.Items))
	for i, ci := range ext.Commit.Items {
		it, err := state.ParseItem(ci.Kind, ci.Raw)
		if err != nil {
			return "", nil, false, fmt.Errorf("checkpoint: run %s extension %q item %d: %w", run.ID(), extensionKey, i, err)
		}
		if ci.Seq <= 0 {
			return "", nil, false, fmt.Errorf("checkpoint: run %s extension %q item %d: seq %d, want > 0", run.ID(), extensionKey, i, ci.Seq)
		}
		if ci.Name != "" {
			it = it.WithName(ci.Name)
		}
		items[i] = it.WithSeq(ci.Seq)
	}
	return ext.Commit.Session, items, true, nil
}
