package state

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// A Delta is what a [Store] writes to save a run: what changed since the
// version the run was last loaded or saved at, so that a save costs
// O(its new items), whatever the run's history (invariant 14).
//
// A delta has three parts. Head is the run's small mutable part (turn,
// agent, response boundary, input, pending approvals, decisions, guardrail
// results, usage, extension records, finished flag, version) as a
// checkpoint document of its own, signed when the store signs, with empty
// item and context lists. Items are the run's items recorded since Base,
// each as its own JSON, in Seq order. Context, when it is not nil, is the
// context the run's items follow (the session history the run started
// from, or a handoff filter's result), which changes about once a run.
//
// A store applies a delta as one atomic compare-and-swap: if the stored
// version is Base, it replaces the stored head with Head, adds Items (keyed
// by run and Seq, with their Version), replaces the stored context if
// Context is not nil, and, when Full, first removes every item and context
// stored for the run. Then the caller records the save on the run
// (package state/storage's Save). [Assemble] rebuilds the
// run from what is stored. A store that copied what it wrote may then
// [Delta.Release] the delta.
type Delta struct {
	RunID   string
	Base    int64 // the stored version the delta applies to; 0: none stored
	Version int64 // the version the delta stores: Base+1
	Full    bool  // the store holds nothing of this run to build on
	Head    []byte
	Items   []Piece
	Context []byte // a JSON array of items; nil: unchanged
	// Summary is what a [Lister] files the run under as of this save:
	// a store that lists runs writes it to its index with the save.
	Summary RunSummary
	// Filed reports that the stored version the delta builds on filed
	// the run under Summary's session and status already (the delta is
	// not Full, and neither changed since the save or load that gave the
	// run its base): a store whose listing keeps only those may leave it
	// as it is, as it does while a run goes on.
	Filed bool

	mark int      // journal entries this delta covers
	next baseline // what the run's baseline becomes once the delta is saved
	// sealed is the buffer a sealed delta's parts were written into, and
	// box what it came from the pool in (nil: it was made): what
	// [Delta.Release] hands back.
	sealed []byte
	box    *sealBuf
}

// A Piece is one append-only record of a run as a store keeps it: an item
// at its position (Seq > 0), the nth guardrail result recorded (Seq =
// -n), or the nth model call recorded (Seq = -2^40-n, see
// [Run.ModelCalls]), with the version of the save that wrote it and its
// JSON. A store keeps pieces keyed by run and Seq, and need not tell them
// apart.
type Piece struct {
	Seq     int64
	Version int64
	Data    []byte
}

// baseline is what a store holds of a run after the save or load that set
// it, so that the next save writes only what changed.
type baseline struct {
	known     bool      // a store holds exactly the run as it was at that save
	version   int64     // the stored version
	full      int64     // the version of the last full save (where the chain starts)
	digest    [32]byte  // the chain digest over the stored items, save by save
	session   string    // the session the stored version is filed under
	status    RunStatus // and its status
	ctxGen    int       // the context generation stored
	ctxDigest [32]byte  // digest of the stored context
	guards    int       // guardrail results stored
	calls     int       // model calls stored
}

// deltaKey is the extension key under which a head records what binds it
// to its items and context. Marshal never writes it; [Assemble] removes it.
const deltaKey = "turnkit.delta"

// deltaRecord is the head's record of its items and context: the chain
// digest of every stored item, save by save since the last full save, and
// the digest of the stored context. It lies inside the signed payload, so
// with signing on an edit, deletion or addition of a stored item fails to
// load like an edit of the head.
type deltaRecord struct {
	Full          int64  `json:"full"`
	Digest        string `json:"digest"`
	ContextDigest string `json:"context_digest"`
}

// HeadVersions reads a stored head (a [Delta]'s Head) and returns the
// version it was saved as and full, the version of the last full save:
// the stored pieces [Assemble] needs are those of versions full to
// version. A whole checkpoint written by [Marshal] (a store's earlier
// format) has full 0; a sealed head, as JSON or as bytes
// ([WithBinaryParts]), keeps both in the clear. A store that cannot drop the pieces a full save
// replaces in the same atomic step as the save (a directory of files)
// uses full to tell which of them to read. A head that is not a
// checkpoint fails with a [*DecodeError] wrapping [ErrMalformed].
func HeadVersions(head []byte) (version, full int64, err error) {
	if _, _, version, full, _, ok := readBinaryHead(head); ok {
		return version, full, nil
	}
	var v struct {
		Run struct {
			Version   int64 `json:"version"`
			Extension struct {
				Delta *deltaRecord `json:"turnkit.delta"`
			} `json:"extension"`
		} `json:"run"`
	}
	if err := json.Unmarshal(head, &v); err != nil {
		return 0, 0, &DecodeError{Path: "$", Err: fmt.Errorf("%w: stored checkpoint: %w", ErrMalformed, err)}
	}
	if v.Run.Extension.Delta != nil {
		full = v.Run.Extension.Delta.Full
	}
	return v.Run.Version, full, nil
}

// Delta returns what a store must write to save r as version
// r.Version()+1: everything, the first time or when r did not come from a
// store at its current version (a new run, a run from [Unmarshal]), and
// otherwise only what changed since then. Head is encoded with opts, such
// as [WithSigningKey]. It takes a consistent snapshot under r's lock and
// does not change r; package state/storage records the save, after the
// write.
func (r *Run) Delta(opts ...MarshalOption) (*Delta, error) {
	cfg := newMarshalConfig(opts)
	var s deltaSnapshot
	if err := r.takeDelta(&s); err != nil {
		return nil, err
	}
	head, err := marshalWire(&s.head, &cfg)
	if err != nil {
		return nil, err
	}
	return s.withHead(head, &cfg)
}

// deltaSnapshot is a delta on its way: what [Run.Delta] takes of the run
// under its lock, then encodes outside it.
type deltaSnapshot struct {
	d          *Delta
	items      []Item // the items the delta stores, in Seq order
	guards     []GuardrailResult
	guardsFrom int // guardrail results stored before these
	calls      []ModelCall
	callsFrom  int // model calls stored before these
	ctxChanged bool
	ctx        []Item
	ctxRef     bool
	ctxStamp   int64
	ctxPending *historyRef
	sessionID  string
	head       snapshot // the head, without its items and context
}

// takeDelta fills s with everything of a delta of r but its encoded head:
// the snapshot, the pieces and the context encoded, and the head's wire
// value with its delta record. Delta encodes the head with marshalWire;
// the differential tests with its encoding/json reference.
func (r *Run) takeDelta(s *deltaSnapshot) error {
	r.snapshotDelta(s)
	if err := s.encodePieces(); err != nil {
		return err
	}
	if err := s.encodeContext(); err != nil {
		return err
	}
	return s.recordInHead()
}

// snapshotDelta takes, under r's lock, what a delta of r holds: what
// changed since r's baseline, or everything when there is none. Positions
// recorded from here on are not in it: the journal keeps them for the
// next delta, whether this one is saved or not.
func (r *Run) snapshotDelta(s *deltaSnapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := &Delta{RunID: r.id, Base: r.version, Version: r.version + 1}
	d.Full = !r.base.known || r.base.version != r.version
	s.d = d
	s.items = r.deltaItemsLocked(d)
	r.journaling = true
	d.mark = len(r.journal)
	s.guardsFrom, s.callsFrom = r.base.guards, r.base.calls
	if d.Full {
		s.guardsFrom, s.callsFrom = 0, 0
	}
	s.guards = cloneGuards(r.guards[min(s.guardsFrom, len(r.guards)):])
	s.calls = r.calls[min(s.callsFrom, len(r.calls)):] // never changed in place: appended to only
	s.ctxChanged = d.Full || r.ctxGen != r.base.ctxGen
	if s.ctxChanged {
		// Shared, not copied: the run never writes into its context, it
		// only replaces it (setHistoryLocked, replaceContext), and at
		// 10 000 items of history a copy was 0.9 MB a run's first save.
		s.ctx = slices.Clip(r.context)
	}
	s.ctxRef, s.ctxStamp, s.ctxPending, s.sessionID = r.ctxRef, r.ctxStamp, r.ctxPending, r.sessionID
	d.Summary = r.summaryLocked(d.Version)
	d.Filed = !d.Full && r.base.session == d.Summary.SessionID && r.base.status == d.Summary.Status
	s.head = r.wireLocked(false)
	d.next.known, d.next.version, d.next.ctxGen = true, d.Version, r.ctxGen
	d.next.session, d.next.status = d.Summary.SessionID, d.Summary.Status
	d.next.guards = s.guardsFrom + len(s.guards)
	d.next.calls = s.callsFrom + len(s.calls)
}

// deltaItemsLocked returns the items d stores, in Seq order: all of them
// for a full delta, else those the journal names; and starts d's next
// baseline from r's, or afresh for a full delta.
func (r *Run) deltaItemsLocked(d *Delta) []Item {
	if d.Full {
		d.next = baseline{full: d.Version}
		return slices.Clone(r.items)
	}
	d.next = r.base
	items := make([]Item, 0, len(r.journal))
	for _, seq := range r.journal {
		if it, ok := r.itemAtLocked(seq); ok {
			items = append(items, it)
		}
	}
	slices.SortFunc(items, func(a, b Item) int { return cmp.Compare(a.seq, b.seq) })
	return items
}

// encodePieces encodes the snapshot's guardrail results, model calls and
// items as the delta's pieces, in Seq order, and extends the chain digest
// over them (from zero when the delta is full).
func (s *deltaSnapshot) encodePieces() error {
	d := s.d
	d.Items = make([]Piece, 0, len(s.calls)+len(s.guards)+len(s.items))
	for i, g := range s.guards { // negative positions first: Seq order
		data, err := json.Marshal(g)
		if err != nil {
			return fmt.Errorf("state: delta of run %s: guardrail result %d: %w", d.RunID, s.guardsFrom+i+1, err)
		}
		d.Items = append(d.Items, Piece{Seq: -int64(s.guardsFrom + i + 1), Version: d.Version, Data: data})
	}
	for i := range s.calls { // below the guardrail results: Seq order once reversed
		data := appendModelCall(make([]byte, 0, modelCallSize(&s.calls[i])), &s.calls[i])
		d.Items = append(d.Items, Piece{Seq: callSeqBase - int64(s.callsFrom+i+1), Version: d.Version, Data: data})
	}
	slices.Reverse(d.Items)
	for _, it := range s.items {
		data, err := itemPiece(it)
		if err != nil {
			return fmt.Errorf("state: delta of run %s: item %d: %w", d.RunID, it.seq, err)
		}
		d.Items = append(d.Items, Piece{Seq: it.seq, Version: d.Version, Data: data})
	}
	if len(d.Items) > 0 || d.Full {
		d.next.digest = chain(d.next.digest, d.Version, d.Items)
	}
	return nil
}

// encodeContext encodes the context when it changed since the baseline:
// the session history goes as a reference to it (history.go).
func (s *deltaSnapshot) encodeContext() error {
	if !s.ctxChanged {
		return nil
	}
	data, err := contextPiece(s.sessionID, s.ctx, s.ctxRef, s.ctxStamp, s.ctxPending)
	if err != nil {
		return fmt.Errorf("state: delta of run %s: context: %w", s.d.RunID, err)
	}
	s.d.Context = data
	s.d.next.ctxDigest = sha256.Sum256(data)
	return nil
}

// recordInHead writes the delta record, which binds the head to the
// stored items and context, into the head, and sets its version.
func (s *deltaSnapshot) recordInHead() error {
	next := &s.d.next
	s.head.ownKey, s.head.own = deltaKey, appendDeltaRecord(next.full, next.digest[:], next.ctxDigest[:])
	s.head.Version = s.d.Version
	return nil
}

// withHead completes the delta with its encoded head, sealing its parts
// when cfg has a sealer.
func (s *deltaSnapshot) withHead(head []byte, cfg *marshalConfig) (*Delta, error) {
	s.d.Head = head
	if cfg.sealer != nil {
		if err := s.d.seal(cfg.sealer, s.sessionID, cfg.binaryParts); err != nil {
			return nil, err
		}
	}
	return s.d, nil
}

// saved records that a store saved d (runcore.Saved). A delta of another
// run, or one not taken at the run's current version (already recorded,
// or stale), changes nothing: recording it again would drop positions
// recorded since from the next delta.
func (r *Run) saved(d *Delta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d == nil || d.RunID != r.id || d.Base != r.version {
		return
	}
	r.version = d.Version
	r.base = d.next
	// The positions d holds leave the journal; those recorded after d was
	// taken stay for the next delta.
	r.journal = append(r.journal[:0], r.journal[min(d.mark, len(r.journal)):]...)
}

// Assemble rebuilds a run from what a [Store] keeps of it: its head (the
// latest Delta's Head), its context (the latest non-nil Delta.Context) and
// its items (every Piece stored since the last full save, in any order).
// The result is the run as it was saved, [Marshal] of it equal to
// [Marshal] of the run that was saved, and its next Delta builds on the
// store's content. The head is decoded with opts; with [WithVerifyKeys]
// its signature must verify, and items or a context that are not exactly
// the ones saved fail with a [*SignatureError] wrapping [ErrTampered].
// Without keys they fail with a [*DecodeError] wrapping [ErrInvalid].
//
// A context stored as a reference to the run's session history (see
// runcore.SetSessionHistory) is checked for its shape only: the run comes
// back with its context pending ([Run.HistoryRef]) until
// [Run.ResolveHistory] is given the session's items.
//
// A head without a delta record is a whole checkpoint written by
// [Marshal] (a store's earlier format): it is decoded as such, and the
// run's next save is a full one.
func Assemble(head, context []byte, items []Piece, opts ...UnmarshalOption) (*Run, error) {
	var a assembly
	r, err := a.prepare(head, context, items, opts)
	if r != nil || err != nil {
		return r, err // a whole checkpoint, or a refusal
	}
	var done, gaveUp bool
	if r, done, gaveUp, err = unmarshalFast(a.doc, nil); !done {
		r, err = unmarshalJSON(a.doc, &a.inner, fastAfter(gaveUp))
	}
	if err != nil {
		return nil, err
	}
	return a.finish(r)
}

// An assembly is a run on its way from a store's pieces to a [Run]:
// [Assemble] prepares the whole checkpoint document, decodes it, and
// finishes the run with the baseline the pieces give it. The differential
// tests decode the same document with the encoding/json reference.
type assembly struct {
	cfg       unmarshalConfig
	env       wireEnvelope
	payload   map[string]json.RawMessage // the head's run object, member by member
	ext       map[string]json.RawMessage // its extension records
	rec       deltaRecord
	sorted    []Piece // the stored pieces, by Seq once spliced
	digest    [32]byte
	ctxDigest [32]byte
	ref       *historyRef // the session history, when the context refers to it
	doc       []byte      // the whole checkpoint, to decode
	inner     unmarshalConfig
}

// prepare checks head, context and items against each other and splices
// them into a.doc. A head without a delta record is a whole checkpoint:
// prepare decodes it and returns the run. A refusal is returned as the
// error; otherwise both are nil and a.doc is ready.
func (a *assembly) prepare(head, context []byte, items []Piece, opts []UnmarshalOption) (*Run, error) {
	a.cfg = newUnmarshalConfig(opts)
	head, context, items, err := a.openHead(head, context, items)
	if err != nil {
		return nil, err
	}
	whole, err := a.readRecord(head, context, items)
	if whole || err != nil {
		if err != nil {
			return nil, err
		}
		return Unmarshal(head, opts...) // a whole checkpoint (the next save is full), or what is wrong with it
	}
	if context == nil {
		context = []byte("[]")
	}
	if err := a.checkPieces(context, items); err != nil {
		return nil, err
	}
	if context, err = a.splice(context); err != nil {
		return nil, err
	}
	a.doc = a.document(len(head), context)
	a.inner = a.cfg
	a.inner.keys = nil // the head was verified; the items by its digest
	a.inner.maxSize = max(a.cfg.maxSize, int64(len(a.doc)))
	return nil, nil
}

// openHead opens the stored parts when a sealer is configured (or refuses
// a sealed head without one), then reads the head's envelope and, with
// keys, verifies its signature.
func (a *assembly) openHead(head, context []byte, items []Piece) ([]byte, []byte, []Piece, error) {
	switch {
	case a.cfg.sealer != nil:
		var err error
		if head, context, items, err = openStored(a.cfg.sealer, head, context, items); err != nil {
			return nil, nil, nil, err
		}
	case isSealedHead(head):
		return nil, nil, nil, &DecodeError{Path: "$.schema", Err: fmt.Errorf("%w: %w", ErrMalformed, ErrSealed)}
	}
	if int64(len(head)) > a.cfg.maxSize {
		return nil, nil, nil, &DecodeError{Path: "$", Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(head), a.cfg.maxSize)}
	}
	if err := decodeStrict(head, &a.env, "$"); err != nil {
		return nil, nil, nil, err
	}
	if a.cfg.keys != nil && a.env.Schema == SchemaName {
		if err := verify(a.cfg.keys, a.env.Signature, a.env.Schema, a.env.Version, a.env.Run); err != nil {
			return nil, nil, nil, err
		}
	}
	return head, context, items, nil
}

// readRecord reads the head's run object and its delta record. whole
// reports a head to decode as a whole checkpoint: one without a record,
// or one whose run object [Unmarshal] must report on.
func (a *assembly) readRecord(head, context []byte, items []Piece) (whole bool, err error) {
	if err := json.Unmarshal(a.env.Run, &a.payload); err != nil || a.payload == nil {
		return true, nil
	}
	if raw, ok := a.payload[keyExtension]; ok {
		if err := json.Unmarshal(raw, &a.ext); err != nil {
			return true, nil
		}
	}
	recRaw, ok := a.ext[deltaKey]
	if !ok {
		if len(items) > 0 || context != nil {
			return false, invalid("$.run.extension", "stored items without a delta record in the head")
		}
		return true, nil
	}
	return false, decodeStrict(recRaw, &a.rec, "$.run.extension."+deltaKey)
}

// checkPieces verifies the stored items against the head's chain, save by
// save, and the context against its digest.
func (a *assembly) checkPieces(context []byte, items []Piece) error {
	a.sorted = slices.Clone(items)
	slices.SortFunc(a.sorted, func(x, y Piece) int {
		return cmp.Or(cmp.Compare(x.Version, y.Version), cmp.Compare(x.Seq, y.Seq))
	})
	if len(a.sorted) > 0 && a.sorted[0].Version < a.rec.Full {
		return a.tampered("stored items")
	}
	a.digest = chainAll(a.rec.Full, a.sorted)
	if hex.EncodeToString(a.digest[:]) != a.rec.Digest {
		return a.tampered("stored items")
	}
	a.ctxDigest = sha256.Sum256(context)
	if hex.EncodeToString(a.ctxDigest[:]) != a.rec.ContextDigest {
		return a.tampered("stored context")
	}
	return nil
}

// tampered is the error for stored parts (what) that do not match the
// head: a [*SignatureError] when the head was verified with keys.
func (a *assembly) tampered(what string) error {
	if a.cfg.keys != nil {
		keyID := ""
		if a.env.Signature != nil {
			keyID = a.env.Signature.KeyID
		}
		return &SignatureError{KeyID: keyID, Reason: what + " do not match the signed head"}
	}
	return invalid("$.run.extension."+deltaKey, "%s do not match the head", what)
}

// splice puts the model calls, the guardrail results, the items and the
// context into the head's run object, and takes the delta record out of
// it. A context that refers to the session history is kept in a.ref and
// spliced as empty; the context spliced is returned.
func (a *assembly) splice(context []byte) ([]byte, error) {
	sorted := a.sorted
	slices.SortFunc(sorted, func(x, y Piece) int { return cmp.Compare(x.Seq, y.Seq) })
	firstItem, _ := slices.BinarySearchFunc(sorted, 1, func(p Piece, seq int64) int { return cmp.Compare(p.Seq, seq) })
	firstGuard, _ := slices.BinarySearchFunc(sorted, callSeqBase, func(p Piece, seq int64) int { return cmp.Compare(p.Seq, seq) })
	calls := sorted[:firstGuard]
	slices.Reverse(calls) // callSeqBase-1, -2, …: the order they were recorded in
	for i, p := range calls {
		if p.Seq != callSeqBase-int64(i+1) {
			return nil, a.tampered("stored model calls")
		}
	}
	if len(calls) > 0 {
		a.payload[keyModelCalls] = jsonList(calls)
	}
	guards := sorted[firstGuard:firstItem]
	slices.Reverse(guards) // -1, -2, …: the order they were recorded in
	for i, p := range guards {
		if p.Seq != -int64(i+1) {
			return nil, a.tampered("stored guardrail results")
		}
	}
	a.payload[keyGuardrails] = jsonList(guards)
	a.payload[keyItems] = jsonList(sorted[firstItem:])
	if isRefPiece(context) {
		// The session history, by reference: the run's context is pending
		// until the session's items are read (history.go).
		var sid string
		_ = json.Unmarshal(a.payload[keySession], &sid) // a bad session ID fails the decode after
		var err error
		if a.ref, err = decodeRefPiece(context, sid); err != nil {
			return nil, err
		}
		context = []byte("[]")
	}
	a.payload[keyContext] = context
	return context, a.dropRecord()
}

// dropRecord takes the delta record out of the run object's extension
// records, and the extension member out when it was the only one.
func (a *assembly) dropRecord() error {
	delete(a.ext, deltaKey)
	if len(a.ext) == 0 {
		delete(a.payload, keyExtension)
		return nil
	}
	raw, err := json.Marshal(a.ext)
	if err != nil {
		return fmt.Errorf("state: assemble: %w", err)
	}
	a.payload[keyExtension] = raw
	return nil
}

// document writes the whole checkpoint, its run object's members in
// order, as bytes: json.Marshal would validate and compact every item's
// JSON again, twice, which costs more than the decoding after it.
func (a *assembly) document(headLen int, context []byte) []byte {
	doc := make([]byte, 0, headLen+len(context)+piecesLen(a.sorted)+64)
	doc = append(doc, '{')
	doc = appendMember(doc, envFields.Name("Schema"), appendString(nil, a.env.Schema))
	doc = append(doc, ',')
	doc = appendMember(doc, envFields.Name("Version"), strconv.AppendInt(nil, int64(a.env.Version), 10))
	doc = append(doc, ',')
	doc = appendMember(doc, envFields.Name("Run"), nil)
	doc = append(doc, '{')
	for i, k := range slices.Sorted(maps.Keys(a.payload)) {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = appendMember(doc, k, a.payload[k])
	}
	return append(doc, '}', '}')
}

// finish gives the decoded run its baseline, so that its next delta
// builds on what the store holds, and its pending session history.
func (a *assembly) finish(r *Run) (*Run, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.journaling = true
	r.base = baseline{known: true, version: r.version, full: a.rec.Full, digest: a.digest,
		session: r.sessionID, status: r.statusLocked(),
		ctxGen: r.ctxGen, ctxDigest: a.ctxDigest, guards: len(r.guards), calls: len(r.calls)}
	if a.ref != nil {
		if r.ctxFrom != 0 {
			return nil, invalid("$.run.context_from", "%d, but a session history comes before every item", r.ctxFrom)
		}
		r.ctxRef, r.ctxPending = true, a.ref
	}
	return r, nil
}

// The members of a run object Assemble splices the stored parts into.
var (
	keyGuardrails = runFields.Name("Guardrails")
	keyModelCalls = runFields.Name("ModelCalls")
	keyItems      = runFields.Name("Items")
	keyContext    = runFields.Name("Context")
	keyExtension  = runFields.Name("Extension")
	keySession    = runFields.Name("SessionID")
)

// chainAll is the chain digest of the pieces stored since the full save
// of version full, sorted by version and then Seq.
func chainAll(full int64, sorted []Piece) [32]byte {
	i := 0
	for i < len(sorted) && sorted[i].Version == full {
		i++
	}
	digest := chain([32]byte{}, full, sorted[:i])
	for i < len(sorted) {
		j := i
		for j < len(sorted) && sorted[j].Version == sorted[i].Version {
			j++
		}
		digest = chain(digest, sorted[i].Version, sorted[i:j])
		i = j
	}
	return digest
}

// chain extends digest with the items one save stored, in Seq order, as
// version v.
func chain(digest [32]byte, v int64, items []Piece) [32]byte {
	h := sha256.New()
	h.Write(digest[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(v))
	h.Write(n[:])
	for _, p := range items {
		binary.BigEndian.PutUint64(n[:], uint64(p.Seq))
		h.Write(n[:])
		binary.BigEndian.PutUint64(n[:], uint64(len(p.Data)))
		h.Write(n[:])
		h.Write(p.Data)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// itemPiece returns json.Marshal(wireItemOf(it)), written by hand in one
// buffer when it can be (appendItem).
func itemPiece(it Item) ([]byte, error) {
	if data, ok := appendItem(make([]byte, 0, 48+len(it.name)+len(it.raw)), it); ok {
		return data, nil
	}
	return json.Marshal(wireItemOf(it))
}

// appendDeltaRecord returns json.Marshal(deltaRecord{full, hex of digest,
// hex of ctxDigest}), written in one buffer: hex needs no escaping.
func appendDeltaRecord(full int64, digest, ctxDigest []byte) []byte {
	b := make([]byte, 0, 64+2*len(digest)+2*len(ctxDigest))
	b = append(b, `{"full":`...)
	b = strconv.AppendInt(b, full, 10)
	b = append(b, `,"digest":"`...)
	b = hex.AppendEncode(b, digest)
	b = append(b, `","context_digest":"`...)
	b = hex.AppendEncode(b, ctxDigest)
	return append(b, `"}`...)
}

// wireItemOf is one item in its wire shape.
func wireItemOf(it Item) wireItem {
	w := wireItem{Seq: it.seq, Kind: it.kind, Raw: it.raw}
	if it.kind.IsOutput() {
		w.Name = it.name
	}
	return w
}

// jsonList joins the pieces' JSON into an array.
func jsonList(pieces []Piece) []byte {
	var list bytes.Buffer
	list.WriteByte('[')
	for i, p := range pieces {
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(p.Data)
	}
	list.WriteByte(']')
	return list.Bytes()
}

// appendMember appends "key": and then value, as they are.
func appendMember(dst []byte, key string, value []byte) []byte {
	dst = appendString(dst, key)
	dst = append(dst, ':')
	return append(dst, value...)
}

// piecesLen is the total size of the pieces' JSON.
func piecesLen(pieces []Piece) int {
	n := 0
	for _, p := range pieces {
		n += len(p.Data) + 1
	}
	return n
}
