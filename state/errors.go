package state

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors a checkpoint or a decision may fail with; match them with
// errors.Is. The typed errors below wrap them and say where.
var (
	// ErrMalformed means a checkpoint is not well-formed JSON of the
	// expected shape: truncated, corrupted, a wrong type, a missing field.
	// It is wrapped by [*DecodeError].
	ErrMalformed = errors.New("state: malformed checkpoint")
	// ErrInvalid means a checkpoint is well-formed but its parts do not fit
	// together: positions out of order, a pending approval for a call that
	// is not there. It is wrapped by [*DecodeError].
	ErrInvalid = errors.New("state: inconsistent checkpoint")
	// ErrTooLarge means a checkpoint exceeds the size limit (see
	// [WithMaxSize]). It is wrapped by [*DecodeError].
	ErrTooLarge = errors.New("state: checkpoint too large")
	// ErrVersion means a checkpoint has a schema or version this code cannot
	// read. It is wrapped by [*VersionError].
	ErrVersion = errors.New("state: unsupported checkpoint version")
	// ErrTampered means a signed checkpoint was edited, is unsigned where a
	// signature is required, or names a key that is not trusted. It is
	// wrapped by [*SignatureError].
	ErrTampered = errors.New("state: checkpoint signature mismatch")
	// ErrUnknownCall means a decision names a call ID the run has no
	// pending approval for. It is wrapped by [*DecisionError].
	ErrUnknownCall = errors.New("state: unknown call ID")
	// ErrAlreadyDecided means a call already has an exact decision; the
	// first decision stands. It is wrapped by [*DecisionError], and by a
	// [*DecodeError] (beside [ErrInvalid]) for a checkpoint holding a
	// second exact decision on a call that contradicts the first.
	ErrAlreadyDecided = errors.New("state: call already decided")
	// ErrDuplicateOutput means a checkpoint holds a second output for a
	// call that already has one; the Responses API refuses such history.
	// A [*DecodeError] wraps it beside [ErrInvalid].
	ErrDuplicateOutput = errors.New("state: second output for one call")
	// ErrArgumentsChanged means a call's arguments differ from those its
	// decision was made on. It is wrapped by [*FingerprintError].
	ErrArgumentsChanged = errors.New("state: call arguments changed after the decision")
)

// A DecodeError reports a checkpoint that could not be decoded. Path is
// the JSON path of the offending value, such as "$.run.items[3].seq", or
// for a syntax error or truncation of the value it occurs in (a path
// deeper than 32 levels ends in "…"); Offset is the byte offset of a
// syntax or type error, or 0. Err wraps [ErrMalformed], [ErrInvalid] or
// [ErrTooLarge], and may wrap a sentinel that says more, such as
// [ErrDuplicateOutput].
type DecodeError struct {
	Path   string
	Offset int64
	Err    error
}

func (e *DecodeError) Error() string {
	s := "state: decode checkpoint at " + e.Path
	if e.Offset > 0 {
		s += " (byte " + strconv.FormatInt(e.Offset, 10) + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// A VersionError reports a checkpoint of another schema or a version this
// code does not read (newer than [SchemaVersion], or older without a
// migration).
type VersionError struct {
	Schema  string
	Version int
}

func (e *VersionError) Error() string {
	if e.Schema != SchemaName {
		return fmt.Sprintf("state: checkpoint schema %q, want %q", e.Schema, SchemaName)
	}
	if e.Version > SchemaVersion {
		return fmt.Sprintf("state: checkpoint version %d is newer than this code reads (%d)", e.Version, SchemaVersion)
	}
	return fmt.Sprintf("state: checkpoint version %d has no migration to version %d", e.Version, SchemaVersion)
}

// Unwrap returns [ErrVersion].
func (e *VersionError) Unwrap() error { return ErrVersion }

// A SignatureError reports a checkpoint whose signature does not verify.
// KeyID is the key the checkpoint names ("" if unsigned).
type SignatureError struct {
	KeyID  string
	Reason string
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("state: checkpoint signature (key %q): %s", e.KeyID, e.Reason)
}

// Unwrap returns [ErrTampered].
func (e *SignatureError) Unwrap() error { return ErrTampered }

// A DecisionError reports a decision that could not be recorded; the run
// is unchanged. Err wraps [ErrUnknownCall] or [ErrAlreadyDecided].
type DecisionError struct {
	RunID  string
	CallID string
	Tool   string
	Err    error
}

func (e *DecisionError) Error() string {
	who := "call " + strconv.Quote(e.CallID)
	if e.CallID == "" {
		who = "tool " + strconv.Quote(e.Tool)
	}
	return "state: run " + e.RunID + ": decide " + who + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *DecisionError) Unwrap() error { return e.Err }

// A FingerprintError reports a call whose arguments no longer match the
// decision made on it: the checkpoint changed after the decision, or the
// model reused a call ID. The call does not run.
type FingerprintError struct {
	CallID string
	Tool   string
	// Decided and Got are the fingerprints of the decided and the current
	// arguments.
	Decided, Got string
}

func (e *FingerprintError) Error() string {
	return fmt.Sprintf("state: tool %q call %s: arguments changed after the decision (fingerprint %.12s, decided %.12s)",
		e.Tool, e.CallID, e.Got, e.Decided)
}

// Unwrap returns [ErrArgumentsChanged].
func (e *FingerprintError) Unwrap() error { return ErrArgumentsChanged }

// A StoreError reports a [Store] operation that failed on one run. Err
// wraps [ErrConflict] (then Have is the caller's version and Stored the
// stored one), [ErrNotFound], or the cause.
type StoreError struct {
	Op     string // "load", "save" or "delete"
	RunID  string
	Have   int64
	Stored int64
	Err    error
}

func (e *StoreError) Error() string {
	s := "state: " + e.Op + " run " + strconv.Quote(e.RunID) + ": " + e.Err.Error()
	if errors.Is(e.Err, ErrConflict) {
		s += " (have version " + strconv.FormatInt(e.Have, 10) + ", stored " + strconv.FormatInt(e.Stored, 10) + ")"
	}
	return s
}

// Unwrap returns the cause.
func (e *StoreError) Unwrap() error { return e.Err }
