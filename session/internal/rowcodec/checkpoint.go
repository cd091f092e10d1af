package rowcodec

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Codec holds the options a store encodes and decodes checkpoints with,
// as the WithCodec option of each store sets them: with
// [state.WithSigningKey] among Marshal and [state.WithVerifyKeys] among
// Unmarshal, checkpoints are signed on save and a checkpoint edited at rest
// fails to load with [state.ErrTampered]. The zero Codec writes and reads
// unsigned checkpoints.
type Codec struct {
	Marshal   []state.MarshalOption
	Unmarshal []state.UnmarshalOption
}

// With returns c with marshal and unmarshal appended (copied, so that c's
// slices are never shared with the caller's), as repeated WithCodec
// options accumulate. The first adds [state.WithBinaryParts] before
// them: the stores of this module keep a checkpoint's pieces and context
// as bytes (a BLOB, a bytea, a Redis string), so sealed ones are kept as
// ciphertext, not as JSON strings of its base64.
func (c Codec) With(marshal []state.MarshalOption, unmarshal []state.UnmarshalOption) Codec {
	m := slices.Clip(c.Marshal)
	if len(m) == 0 {
		m = []state.MarshalOption{state.WithBinaryParts()}
	}
	return Codec{
		Marshal:   append(m, marshal...),
		Unmarshal: append(slices.Clip(c.Unmarshal), unmarshal...),
	}
}

// Encode returns the stored form of a checkpoint: [state.Marshal] of run
// with c.Marshal.
func (c Codec) Encode(run *state.Run) ([]byte, error) {
	if run == nil || run.ID() == "" {
		return nil, &state.StoreError{Op: "save", Err: errors.New("nil run or empty run ID")}
	}
	data, err := state.Marshal(run, c.Marshal...)
	if err != nil {
		return nil, &state.StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	return data, nil
}

// DecodeRun rebuilds a checkpoint stored at version with c.Unmarshal. A
// checkpoint that fails verification is a [*state.StoreError] wrapping the
// [*state.SignatureError] (and so [state.ErrTampered]).
func (c Codec) DecodeRun(runID string, version int64, data []byte) (*state.Run, error) {
	run, err := state.Unmarshal(data, c.Unmarshal...)
	if err != nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
	}
	runcore.SetVersion(run, version)
	return run, nil
}

// StoreErr translates an error of a state.Store operation at the edge into
// a [*state.StoreError]: after Close it wraps [session.ErrClosed]; when ctx
// is done it wraps ctx's error; an error that already is a StoreError is
// returned as is.
func StoreErr(ctx context.Context, pkg, op, runID string, closed bool, err error) error {
	if err == nil {
		return nil // before se, which errors.As moves to the heap where it is declared
	}
	var se *state.StoreError
	switch {
	case errors.As(err, &se):
		return err
	case closed:
		err = session.ErrClosed
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return &state.StoreError{Op: op, RunID: runID, Err: fmt.Errorf("%s: %w", pkg, err)}
}

// Delta returns what saving run writes (see [state.Run.Delta]), its head
// encoded with c.Marshal. The store applies it as one compare-and-swap and
// then calls run.Saved.
func (c Codec) Delta(run *state.Run) (*state.Delta, error) {
	if run == nil || run.ID() == "" {
		return nil, &state.StoreError{Op: "save", Err: errors.New("nil run or empty run ID")}
	}
	d, err := run.Delta(c.Marshal...)
	if err != nil {
		return nil, &state.StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	return d, nil
}

// Assemble rebuilds a run stored at version from its head, its context
// (nil: none stored) and its item pieces, in any order, with c.Unmarshal
// (see [state.Assemble]). A head without a delta record is a whole
// checkpoint of the stores' earlier format and loads as such; its version
// is the stored one. Pieces or a context that are not the ones saved fail
// with a [*state.StoreError] wrapping [state.ErrTampered] when c verifies
// signatures, and [state.ErrInvalid] otherwise.
func (c Codec) Assemble(runID string, version int64, head, context []byte, items []state.Piece) (*state.Run, error) {
	run, err := state.Assemble(head, context, items, c.Unmarshal...)
	if err != nil {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: err}
	}
	// A delta's head carries the stored version; a whole checkpoint of the
	// earlier format carries the version before its save.
	runcore.SetVersion(run, version)
	return run, nil
}

// ResolveHistory reads the session history a loaded run refers to (see
// [state.Run.HistoryRef]) from sessions, the store that also keeps the
// session, so that a run it loads is whole: it marshals, and resumes with
// the model input it had. A session that no longer holds that history
// leaves the run's history pending (resume refuses it with
// [state.ErrHistoryChanged], and the checkpoint can still be read); a
// failed read is returned as a [*state.StoreError].
func ResolveHistory(ctx context.Context, sessions session.Store, run *state.Run) error {
	sid, n, pending, _ := run.HistoryRef()
	if !pending {
		return nil
	}
	var hist session.History
	if n > 0 {
		var err error
		q := session.HistoryQuery{Limit: n, Stamp: run.HistoryStamp()}
		if hist, err = sessions.ListBefore(ctx, sid, run.ID(), q); err != nil {
			return &state.StoreError{Op: "load", RunID: run.ID(), Err: err}
		}
	}
	if err := run.ResolveHistory(hist.Items); err != nil && !errors.Is(err, state.ErrHistoryChanged) {
		return &state.StoreError{Op: "load", RunID: run.ID(), Err: err}
	}
	return nil
}

// VersionConflict returns the error of a save whose base version have is not the
// stored version stored (0: none stored): a [*state.StoreError] wrapping
// [state.ErrConflict].
func VersionConflict(runID string, have, stored int64) error {
	return &state.StoreError{Op: "save", RunID: runID, Have: have, Stored: stored, Err: state.ErrConflict}
}

// Columns returns the columns of d's items, for an insert that unnests
// arrays: their positions and their JSON.
func Columns(d *state.Delta) (seqs []int64, data [][]byte) {
	seqs = make([]int64, len(d.Items))
	data = make([][]byte, len(d.Items))
	for i, p := range d.Items {
		seqs[i], data[i] = p.Seq, p.Data
	}
	return seqs, data
}

// Page returns the page of a listing that fetched up to n+1 runs newest
// first, with their serials: the first n, and the cursor after the nth
// when an n+1th followed.
func Page(sums []state.RunSummary, serials []int64, n int) state.RunPage {
	if len(sums) <= n {
		return state.RunPage{Runs: sums}
	}
	return state.RunPage{Runs: sums[:n], Next: state.RunCursor(serials[n-1])}
}
