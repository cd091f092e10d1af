package state

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The errors of package state come in four kinds, each in its own
// section below: a checkpoint that cannot be decoded, a decision that
// cannot be recorded or no longer fits its call, a [Store] operation
// or resume refused, and a change a run refuses. Each kind has its sentinels in one var block (match
// them with errors.Is) followed by the typed errors that wrap them and say
// where (match them with errors.As).

// Errors of decoding a checkpoint ([Unmarshal], [Assemble], a [Store]'s
// Load).
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
	// ErrDuplicateOutput means a checkpoint holds a second output for a
	// call that already has one; the Responses API refuses such history.
	// A [*DecodeError] wraps it beside [ErrInvalid].
	ErrDuplicateOutput = errors.New("state: second output for one call")
	// ErrKeyCase means a checkpoint has a key that names one of the
	// format's fields in other letter case ("Seq" for "seq"): keys match
	// exactly. A [*DecodeError] wraps it beside [ErrMalformed].
	ErrKeyCase = errors.New("state: key names a field in other letter case")
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

// Error gives the JSON path where the checkpoint failed to decode, and the cause.
func (e *DecodeError) Error() string {
	s := "state: decode checkpoint at " + e.Path
	if e.Offset > 0 {
		s += " (byte " + strconv.FormatInt(e.Offset, 10) + ")"
	}
	return s + ": " + cause(e.Err)
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

// Error gives the checkpoint's schema or version and the one this package reads.
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

// Error names the signing key and the reason the signature was refused.
func (e *SignatureError) Error() string {
	return fmt.Sprintf("state: checkpoint signature (key %q): %s", e.KeyID, e.Reason)
}

// Unwrap returns [ErrTampered].
func (e *SignatureError) Unwrap() error { return ErrTampered }

// Errors of recording a decision ([Run.Approve], [Run.Reject]) or of
// running a decided call.
var (
	// ErrUnknownCall means a decision names a call ID the run has no
	// pending approval for. It is wrapped by [*DecisionError].
	ErrUnknownCall = errors.New("state: unknown call ID")
	// ErrAlreadyDecided means a call already has an exact decision; the
	// first decision stands. It is wrapped by [*DecisionError], and by a
	// [*DecodeError] (beside [ErrInvalid]) for a checkpoint holding a
	// second exact decision on a call that contradicts the first.
	ErrAlreadyDecided = errors.New("state: call already decided")
	// ErrArgumentsChanged means a call's arguments differ from those its
	// decision was made on. It is wrapped by [*FingerprintError].
	ErrArgumentsChanged = errors.New("state: call arguments changed after the decision")
	// ErrNotElicitation means an answer to an elicitation names a call
	// that waits for an approval, or an approval names one that waits for
	// an answer ([Run.AnswerElicitation], [Run.Approve]). It is wrapped by
	// [*DecisionError].
	ErrNotElicitation = errors.New("state: call does not wait for this kind of decision")
	// ErrInvalidAnswer means an answer to an elicitation has no valid
	// action, content that is not a JSON object, or content with an action
	// other than accept. It is wrapped by [*DecisionError].
	ErrInvalidAnswer = errors.New("state: invalid elicitation answer")
)

// A DecisionError reports a decision that could not be recorded; the run
// is unchanged. Err wraps [ErrUnknownCall] or [ErrAlreadyDecided].
type DecisionError struct {
	RunID  string
	CallID string
	Tool   string
	Err    error
}

// Error names the run, the call (or the tool, for an "always" decision) and the cause.
func (e *DecisionError) Error() string {
	who := "call " + strconv.Quote(e.CallID)
	if e.CallID == "" {
		who = "tool " + strconv.Quote(e.Tool)
	}
	return "state: run " + e.RunID + ": decide " + who + ": " + cause(e.Err)
}

// Unwrap returns the cause, and [ErrConflict] too when the cause is
// [ErrAlreadyDecided]: a second decision on a call conflicts with the
// first, which stands. So the loser of two concurrent decisions on one
// call gets an error matching ErrConflict whichever way it lost: it loaded
// the checkpoint after the winner saved its decision (this error), or
// before, and lost the compare-and-swap of the save ([*StoreError]).
func (e *DecisionError) Unwrap() []error {
	if errors.Is(e.Err, ErrAlreadyDecided) {
		return []error{e.Err, ErrConflict}
	}
	return []error{e.Err}
}

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

// Error names the tool and the call, with the two fingerprints' prefixes.
func (e *FingerprintError) Error() string {
	return fmt.Sprintf("state: tool %q call %s: arguments changed after the decision (fingerprint %.12s, decided %.12s)",
		e.Tool, e.CallID, e.Got, e.Decided)
}

// Unwrap returns [ErrArgumentsChanged].
func (e *FingerprintError) Unwrap() error { return ErrArgumentsChanged }

// Errors returned by [Store] implementations, and by resume for a state
// its run went past.
var (
	// ErrConflict means another worker saved a newer version of the run
	// first: the caller's copy is stale and must not proceed.
	ErrConflict = errors.New("state: version conflict")
	// ErrNotFound means no checkpoint exists for the run ID.
	ErrNotFound = errors.New("state: checkpoint not found")
	// ErrStale means a state is behind what its run already did in another
	// state: a sibling taken from the same result went on, or a newer
	// checkpoint of the run was saved after this one. Resuming it would
	// adopt what the other state's decisions produced, so resume refuses it
	// before any model call or tool runs. It is wrapped by [*StaleError].
	ErrStale = errors.New("state: stale state")
)

// A StoreError reports a [Store] operation that failed on one run. Err
// wraps [ErrConflict] (then Have is the caller's version and Stored the
// stored one), [ErrNotFound], or the cause.
type StoreError struct {
	Op     string // "load", "save", "delete", or "list" ([Lister], with no RunID)
	RunID  string
	Have   int64
	Stored int64
	Err    error
}

// Error names the operation and the run, with the versions on a conflict.
func (e *StoreError) Error() string {
	if e.Op == "list" && e.RunID == "" {
		return "state: list runs: " + cause(e.Err)
	}
	s := "state: " + e.Op + " run " + strconv.Quote(e.RunID) + ": " + cause(e.Err)
	if errors.Is(e.Err, ErrConflict) {
		s += " (have version " + strconv.FormatInt(e.Have, 10) + ", stored " + strconv.FormatInt(e.Stored, 10) + ")"
	}
	return s
}

// Unwrap returns the cause.
func (e *StoreError) Unwrap() error { return e.Err }

// A StaleError reports a state that resume refused because its run went on
// in another state. Either a session holds an item of the run the state
// cannot account for (SessionID, Seq and NextSeq are set, and CallID when
// the item is a call's outcome the state did not decide), or a [Store]
// holds a newer version (Have and Stored are set, and Err wraps the
// store's [ErrConflict]). Nothing ran and the state is unchanged. Match it
// with errors.Is(err, ErrStale); it also matches [ErrConflict]. Resume the
// newest state of the run instead: [Store.Load] it, or let the checkpoint
// middleware's Checkpointer.Resume load it.
type StaleError struct {
	RunID string
	// SessionID is the session that holds more than the state, or "".
	SessionID string
	// Seq is the position of the run the session holds that the state has
	// not recorded; NextSeq is the state's next free position.
	Seq, NextSeq int64
	// CallID names the call whose outcome the session holds at Seq when
	// the state has not decided it (or decided it otherwise), or "".
	CallID string
	// Have is the state's version and Stored the newer one a Store holds.
	Have, Stored int64
	// Err is the cause: the store's conflict, or nil.
	Err error
}

// Error names the run and what shows that it went on in another state.
func (e *StaleError) Error() string {
	s := "state: run " + strconv.Quote(e.RunID) + " went on in another state: "
	switch {
	case e.SessionID != "" && e.CallID != "":
		s += fmt.Sprintf("session %q holds an outcome of call %s at position %d that this state did not decide", e.SessionID, e.CallID, e.Seq)
	case e.SessionID != "":
		s += fmt.Sprintf("session %q holds position %d, which this state has not recorded (its next position is %d)", e.SessionID, e.Seq, e.NextSeq)
	default:
		s += fmt.Sprintf("the store holds version %d, this state is version %d", e.Stored, e.Have)
	}
	return s + "; this state is stale and was not resumed: load the newest state of the run " +
		"(state.Store Load, or checkpoint.Checkpointer.Resume by run ID) and resume that"
}

// Is reports whether target is [ErrStale] or [ErrConflict]: a stale state
// is a copy that another state of the run went past, so code that stops
// on a conflict and reloads the newest state does the right thing with
// it, whichever stage found it.
func (e *StaleError) Is(target error) bool { return target == ErrStale || target == ErrConflict }

// Unwrap returns the cause: a [*StoreError] wrapping [ErrConflict], or nil.
func (e *StaleError) Unwrap() error { return e.Err }

// StaleConflict returns err as a [*StaleError] wrapping it when err is a
// [*StoreError] conflict of a save that claims a loaded state: the store
// holds another version, so the run went on from there. A conflict whose
// stored version is below the state's (the checkpoint was deleted or
// replaced) and any other error are returned unchanged.
func StaleConflict(err error) error {
	se, ok := errors.AsType[*StoreError](err)
	if !ok || !errors.Is(se.Err, ErrConflict) || se.Stored < se.Have {
		return err
	}
	return &StaleError{RunID: se.RunID, Have: se.Have, Stored: se.Stored, Err: err}
}

// Errors of a change a [Run] refuses.
var (
	// ErrContextSeen means runcore.SetHistory was called on a run that
	// already placed a model response: the model has seen the run's
	// context, and replacing it would change what the run's items follow.
	ErrContextSeen = errors.New("state: the model has seen the run's context")
	// ErrNoRunID means [Marshal] or [Run.Delta] was asked to encode a run
	// with an empty ID, which no checkpoint may have: [Unmarshal] refuses
	// it, so a run saved without an ID could not be loaded.
	ErrNoRunID = errors.New("state: run has an empty ID")
)

// Errors of a run's history by reference (see runcore.SetSessionHistory).
var (
	// ErrHistoryPending means a run that came from a store's pieces has not
	// been given the session history it refers to ([Run.ResolveHistory]):
	// it cannot be marshaled or run yet. It is wrapped by [*HistoryError].
	ErrHistoryPending = errors.New("state: the run's session history is not read yet")
	// ErrHistoryChanged means the session no longer holds the history a
	// run started from (it was popped, cleared or rewritten): resuming it
	// would give the model another input. It is wrapped by [*HistoryError].
	ErrHistoryChanged = errors.New("state: the run's session history changed")
)

// A HistoryError reports a run whose context, the last Count items of
// session SessionID before the run, cannot be used. Err is
// [ErrHistoryPending] or [ErrHistoryChanged].
type HistoryError struct {
	RunID     string
	SessionID string
	Count     int
	Reason    string
	Err       error
}

// Error names the run, the size and session of the history, and the cause.
func (e *HistoryError) Error() string {
	s := fmt.Sprintf("state: run %s: history of %d items of session %q", e.RunID, e.Count, e.SessionID)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s + ": " + cause(e.Err)
}

// Unwrap returns the cause.
func (e *HistoryError) Unwrap() error { return e.Err }

// cause returns err's message without this package's prefix, so that a
// state error wrapping another names the package once:
// "state: save run "x": version conflict".
func cause(err error) string { return strings.TrimPrefix(err.Error(), "state: ") }

// A wrapError is an error with its own message that wraps err; it lets a
// message name a sentinel of this package without repeating its prefix.
type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

// wrapf returns an error reading format's message followed by ": " and
// err's message without the package prefix, wrapping err.
func wrapf(err error, format string, args ...any) error {
	return &wrapError{msg: fmt.Sprintf(format, args...) + ": " + cause(err), err: err}
}
