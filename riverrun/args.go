package riverrun

import (
	"fmt"

	"github.com/riverqueue/river"
	"github.com/turnkit/turnkit/state"
)

// Kind is the River job kind of a turnkit run.
const Kind = "turnkit_run"

// RunArgs are the arguments of a run's job. A start job (Resume 0) starts
// the run from Input; a resume job (Resume > 0) takes it on from its
// checkpoint, saved at version Resume or later. Either kind also recovers
// the run from its checkpoint when one exists (a rescued job): see
// [Worker.Work].
//
// Jobs are unique per run ID and resume version (the fields tagged
// `river:"unique"`), in every job state but cancelled and discarded: a
// second Enqueue of one run is skipped as a duplicate, and a decision
// retried after a crash enqueues its resume job once.
type RunArgs struct {
	// RunID identifies the run: its checkpoint, its idempotency keys.
	RunID string `json:"run_id" river:"unique"`
	// Resume is the checkpoint version a resume job was enqueued at; 0 for
	// a start job.
	Resume int64 `json:"resume,omitempty" river:"unique"`
	// Agent names the run's starting agent in the worker's [Registry].
	Agent string `json:"agent"`
	// SessionID is the session the run appends to ("" for none).
	SessionID string `json:"session_id,omitempty"`
	// Input is the run's input; empty in a resume job.
	Input []InputItem `json:"input,omitempty"`
}

// Kind returns [Kind].
func (RunArgs) Kind() string { return Kind }

// InsertOpts makes run jobs unique by their tagged fields.
func (RunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// An InputItem is one input item of a run in a job's arguments: its kind
// and its canonical Responses-API JSON. Raw is a JSON string, not a nested
// object: PostgreSQL keeps job arguments as jsonb, which reorders an
// object's keys and respaces it, and an item's JSON must come back byte
// for byte (the session and the checkpoint compare it).
type InputItem struct {
	Kind state.Kind `json:"kind"`
	Raw  string     `json:"raw"`
}

// Items decodes the input. It fails with an error that names the bad
// item's index.
func (a RunArgs) Items() ([]state.Item, error) {
	items := make([]state.Item, len(a.Input))
	for i, in := range a.Input {
		it, err := state.ParseItem(in.Kind, []byte(in.Raw))
		if err != nil {
			return nil, fmt.Errorf("riverrun: run %s input[%d]: %w", a.RunID, i, err)
		}
		items[i] = it
	}
	return items, nil
}

// A Start describes a run to enqueue.
type Start struct {
	// RunID identifies the run; required. Enqueueing a run ID twice
	// enqueues one job.
	RunID string
	// Agent names the run's starting agent, as registered with the
	// workers' [Registry]; required.
	Agent string
	// SessionID is the session the run reads its history from and appends
	// to ("" for none).
	SessionID string
	// Text, if set, is the input: one user message. Otherwise Input is.
	Text  string
	Input []state.Item
}

// args returns the start job's arguments.
func (s Start) args() (RunArgs, error) {
	if s.RunID == "" || s.Agent == "" {
		return RunArgs{}, &EnqueueError{RunID: s.RunID, Err: ErrInvalidStart}
	}
	input := s.Input
	if s.Text != "" {
		if len(input) > 0 {
			return RunArgs{}, &EnqueueError{RunID: s.RunID, Err: fmt.Errorf("%w: both Text and Input", ErrInvalidStart)}
		}
		input = []state.Item{state.UserMessage(s.Text)}
	}
	if len(input) == 0 {
		return RunArgs{}, &EnqueueError{RunID: s.RunID, Err: fmt.Errorf("%w: no input", ErrInvalidStart)}
	}
	a := RunArgs{RunID: s.RunID, Agent: s.Agent, SessionID: s.SessionID, Input: make([]InputItem, len(input))}
	for i, it := range input {
		if it.IsZero() {
			return RunArgs{}, &EnqueueError{RunID: s.RunID, Err: fmt.Errorf("%w: input[%d] is the zero Item", ErrInvalidStart, i)}
		}
		a.Input[i] = InputItem{Kind: it.Kind(), Raw: string(it.Raw())}
	}
	return a, nil
}
