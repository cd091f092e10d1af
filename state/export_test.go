package state

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/turnkit/turnkit/state/internal/wire"
)

// The encoding/json reference paths and the fast paths alone, for the
// differential tests of codec_fast_test.go.

// UnmarshalReference is Unmarshal without its fast paths.
func UnmarshalReference(data []byte, opts ...UnmarshalOption) (*Run, error) {
	cfg := newUnmarshalConfig(opts)
	if int64(len(data)) > cfg.maxSize {
		return Unmarshal(data, opts...) // the size error
	}
	return unmarshalJSON(data, &cfg, noFast)
}

// UnmarshalFastOnly is Unmarshal's fast path alone: nil where it does not
// apply.
func UnmarshalFastOnly(data []byte, keys map[string][]byte) *Run {
	r, _, _, _ := unmarshalFast(data, keys)
	return r
}

// MarshalReference is Marshal with encoding/json.
func MarshalReference(r *Run, opts ...MarshalOption) ([]byte, error) {
	cfg := newMarshalConfig(opts)
	s, err := r.wire()
	if err != nil {
		return nil, err
	}
	return marshalWireJSON(s.wired(), &cfg)
}

// ParseItemReference is ParseItem with encoding/json.
func ParseItemReference(kind Kind, raw []byte) (Item, error) {
	if !kind.Valid() {
		return ParseItem(kind, raw) // the kind error
	}
	return parseItemJSON(kind, raw)
}

// ParseItemFastOnly is ParseItem's fast path alone.
func ParseItemFastOnly(kind Kind, raw []byte) (Item, bool) { return parseItemFast(kind, raw) }

// JournalLen returns the number of positions r keeps for its next delta.
func JournalLen(r *Run) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.journal)
}

// DeltaReference is Run.Delta with the head encoded by encoding/json.
func DeltaReference(r *Run) (*Delta, error) {
	var s deltaSnapshot
	if err := r.takeDelta(&s); err != nil {
		return nil, err
	}
	var cfg marshalConfig
	head, err := marshalWireJSON(s.head.wired(), &cfg)
	if err != nil {
		return nil, err
	}
	return s.withHead(head, &cfg)
}

// AssembleReference is Assemble decoding with encoding/json.
func AssembleReference(head, context []byte, items []Piece) (*Run, error) {
	var a assembly
	r, err := a.prepare(head, context, items, nil)
	if r != nil || err != nil {
		return r, err
	}
	if r, err = unmarshalJSON(a.doc, &a.inner, noFast); err != nil {
		return nil, err
	}
	return a.finish(r)
}

// The core operations (core.go) under their runcore names, for the
// external tests that build runs by hand.

func (r *Run) Reserve(n int) int64                             { return r.reserve(n) }
func (r *Run) Record(items ...Item) error                      { return r.record(items...) }
func (r *Run) SetResponse(b Boundary)                          { r.setResponse(b) }
func (r *Run) AddInput(items ...Item) []Item                   { return r.addInput(items...) }
func (r *Run) SetTurn(n int)                                   { r.setTurn(n) }
func (r *Run) SetMaxTurns(n int)                               { r.setMaxTurns(n) }
func (r *Run) SetAgent(name string)                            { r.setAgent(name) }
func (r *Run) Finish(output string)                            { r.finish(output) }
func (r *Run) AddUsage(u Usage)                                { r.addUsage(u) }
func (r *Run) AddPending(a Approval)                           { r.addPending(a) }
func (r *Run) ResolvePending(callID string)                    { r.resolvePending(callID) }
func (r *Run) ResolveOwned(owner string)                       { r.resolveOwned(owner) }
func (r *Run) AddDecision(d Decision)                          { r.addDecision(d) }
func (r *Run) ReplaceContext(items []Item)                     { r.replaceContext(items) }
func (r *Run) Place(items []Item, calls int) (Boundary, error) { return r.place(items, calls) }
func (r *Run) SetVersion(v int64)                              { r.setVersion(v) }
func (r *Run) Saved(d *Delta)                                  { r.saved(d) }
func (r *Run) SetSessionID(id string)                          { r.setSessionID(id) }
func (r *Run) SetSessionWatermark(w int64)                     { r.setSessionWatermark(w) }
func (r *Run) SetHistory(items []Item) error                   { return r.setHistory(items) }
func (r *Run) SetSessionHistory(items []Item, stamp int64) error {
	return r.setSessionHistory(items, stamp)
}

// SealHead rewrites the delta record of a stored head so that it binds
// items and context, as the save that stored them would have written it:
// FuzzAssemble uses it to reach the decoding behind the digests. A head
// without a readable delta record is returned as it is.
func SealHead(head, context []byte, items []Piece) []byte {
	var env, run, ext map[string]json.RawMessage
	if json.Unmarshal(head, &env) != nil || json.Unmarshal(env["run"], &run) != nil ||
		json.Unmarshal(run[keyExtension], &ext) != nil {
		return head
	}
	var rec deltaRecord
	if json.Unmarshal(ext[deltaKey], &rec) != nil {
		return head
	}
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b Piece) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(a.Seq, b.Seq))
	})
	digest := chainAll(rec.Full, sorted)
	if context == nil {
		context = []byte("[]")
	}
	ctxDigest := sha256.Sum256(context)
	rec.Digest, rec.ContextDigest = hex.EncodeToString(digest[:]), hex.EncodeToString(ctxDigest[:])
	var err error
	if ext[deltaKey], err = json.Marshal(rec); err != nil {
		return head
	}
	if run[keyExtension], err = json.Marshal(ext); err != nil {
		return head
	}
	if env["run"], err = json.Marshal(run); err != nil {
		return head
	}
	out, err := json.Marshal(env)
	if err != nil {
		return head
	}
	return out
}
func (r *Run) AddModelCall(c ModelCall) { r.addModelCall(c) }

// AppendApprovalsFast and AppendDecisionsFast are Marshal's writers of the
// pending approvals and the decisions, alone.
func AppendApprovalsFast(l []Approval) ([]byte, bool) { return appendApprovals(nil, l, true) }

// AppendDecisionsFast: see AppendApprovalsFast.
func AppendDecisionsFast(l []Decision) ([]byte, bool) { return appendDecisions(nil, l, true) }

// CompletedIndexed reports whether r built its index of outputs (see
// Run.completed).
func CompletedIndexed(r *Run) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.completed != nil
}

func (r *Run) RecordOutput(it Item) (bool, error) { return r.recordOutput(it) }
func (r *Run) NextTurn(limit int) (int, bool)     { return r.nextTurn(limit) }
func (r *Run) PlaceModelResponse(items []Item, calls int, u Usage, c ModelCall) (Boundary, error) {
	return r.placeModelResponse(items, calls, u, c)
}

// WithoutPending is withoutPending of the approvals whose call IDs are
// listed.
func WithoutPending(p []Approval, callIDs ...string) []Approval {
	return withoutPending(p, func(a Approval) bool { return slices.Contains(callIDs, a.CallID) })
}

// MarshalFastOnly is Marshal's fast path alone, without options: false
// where it gives up.
func MarshalFastOnly(r *Run) ([]byte, bool) {
	s, err := r.wire()
	if err != nil {
		return nil, false
	}
	var cfg marshalConfig
	return appendCheckpoint(nil, &s, &cfg)
}

// CheckMembersOf runs the check of a members list on T.
func CheckMembersOf[T any](members func(*T) []any) error {
	return checkMembers(wire.FieldsOf(reflect.TypeFor[T]()), members)
}

// CheckAllMembers checks the package's members lists against their structs.
func CheckAllMembers() error {
	return checkAllMembers()
}

// HistoryDigest is the digest a history reference records of items.
func HistoryDigest(items []Item) (string, error) { return historyDigest(items) }

// DigestMemoCovers returns how many of items' first elements the digests
// memo holds the hash of, or 0.
func DigestMemoCovers(items []Item) int {
	if len(items) == 0 {
		return 0
	}
	digests.mu.Lock()
	defer digests.mu.Unlock()
	return digests.m[weakFirst(items)].n
}

// MaxDigests is the digests memo's bound.
const MaxDigests = maxDigests

// DigestMemoLen returns how many entries the digests memo holds.
func DigestMemoLen() int {
	digests.mu.Lock()
	defer digests.mu.Unlock()
	return len(digests.m)
}
