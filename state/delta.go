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
// stored for the run. Then it calls [Run.Saved]. [Assemble] rebuilds the
// run from what is stored.
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

	mark int      // journal entries this delta covers
	next baseline // what the run's baseline becomes once the delta is saved
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
	known     bool     // a store holds exactly the run as it was at that save
	version   int64    // the stored version
	full      int64    // the version of the last full save (where the chain starts)
	digest    [32]byte // the chain digest over the stored items, save by save
	ctxGen    int      // the context generation stored
	ctxDigest [32]byte // digest of the stored context
	guards    int      // guardrail results stored
	calls     int      // model calls stored
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
// format) has full 0. A store that cannot drop the pieces a full save
// replaces in the same atomic step as the save (a directory of files)
// uses full to tell which of them to read. A head that is not a
// checkpoint fails with a [*DecodeError] wrapping [ErrMalformed].
func HeadVersions(head []byte) (version, full int64, err error) {
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
// does not change r; [Run.Saved] does, after the write.
func (r *Run) Delta(opts ...MarshalOption) (*Delta, error) {
	cfg := newMarshalConfig(opts)
	return r.deltaWith(&cfg, false)
}

// deltaWith is Delta with the head encoded by [marshalWire], or by its
// encoding/json reference for the differential tests. A flag, not a func
// value: cfg handed to a func value would escape, an allocation per save.
func (r *Run) deltaWith(cfg *marshalConfig, reference bool) (*Delta, error) {
	r.mu.Lock()
	d := &Delta{RunID: r.id, Base: r.version, Version: r.version + 1}
	d.Full = !r.base.known || r.base.version != r.version
	var items []Item
	if d.Full {
		items = slices.Clone(r.items)
		d.next = baseline{full: d.Version}
	} else {
		items = make([]Item, 0, len(r.journal))
		for _, seq := range r.journal {
			if it, ok := r.itemAtLocked(seq); ok {
				items = append(items, it)
			}
		}
		slices.SortFunc(items, func(a, b Item) int { return cmp.Compare(a.seq, b.seq) })
		d.next = r.base
	}
	// Positions recorded from here on are not in d: the journal keeps them
	// for the next delta, whether d is saved or not.
	r.journaling = true
	d.mark = len(r.journal)
	guardsFrom := r.base.guards
	if d.Full {
		guardsFrom = 0
	}
	guards := cloneGuards(r.guards[min(guardsFrom, len(r.guards)):])
	callsFrom := r.base.calls
	if d.Full {
		callsFrom = 0
	}
	calls := r.calls[min(callsFrom, len(r.calls)):] // never changed in place: appended to only
	var ctx []Item
	ctxChanged := d.Full || r.ctxGen != r.base.ctxGen
	if ctxChanged {
		ctx = slices.Clone(r.context)
	}
	ctxRef, ctxStamp, ctxPending, sid := r.ctxRef, r.ctxStamp, r.ctxPending, r.sessionID
	d.Summary = r.summaryLocked(d.Version)
	w := r.wireLocked(false)
	gen := r.ctxGen
	r.mu.Unlock()

	d.next.known, d.next.version, d.next.ctxGen = true, d.Version, gen
	d.next.guards = guardsFrom + len(guards)
	d.next.calls = callsFrom + len(calls)
	d.Items = make([]Piece, 0, len(calls)+len(guards)+len(items))
	for i, g := range guards { // negative positions first: Seq order
		data, err := json.Marshal(g)
		if err != nil {
			return nil, fmt.Errorf("state: delta of run %s: guardrail result %d: %w", r.id, guardsFrom+i+1, err)
		}
		d.Items = append(d.Items, Piece{Seq: -int64(guardsFrom + i + 1), Version: d.Version, Data: data})
	}
	for i := range calls { // below the guardrail results: Seq order once reversed
		data := appendModelCall(make([]byte, 0, modelCallSize(&calls[i])), &calls[i])
		d.Items = append(d.Items, Piece{Seq: callSeqBase - int64(callsFrom+i+1), Version: d.Version, Data: data})
	}
	slices.Reverse(d.Items)
	for _, it := range items {
		data, err := itemPiece(it)
		if err != nil {
			return nil, fmt.Errorf("state: delta of run %s: item %d: %w", r.id, it.seq, err)
		}
		d.Items = append(d.Items, Piece{Seq: it.seq, Version: d.Version, Data: data})
	}
	if len(d.Items) > 0 || d.Full {
		d.next.digest = chain(d.next.digest, d.Version, d.Items) // from zero when full
	}
	if ctxChanged {
		// The session history goes as a reference to it (history.go).
		data, err := contextPiece(sid, ctx, ctxRef, ctxStamp, ctxPending)
		if err != nil {
			return nil, fmt.Errorf("state: delta of run %s: context: %w", r.id, err)
		}
		d.Context = data
		d.next.ctxDigest = sha256.Sum256(data)
	}
	rec := appendDeltaRecord(d.next.full, d.next.digest[:], d.next.ctxDigest[:])
	if w.Extension == nil {
		w.Extension = make(map[string]json.RawMessage, 1)
	}
	w.Extension[deltaKey] = rec
	w.Version = d.Version
	var (
		head []byte
		err  error
	)
	if reference {
		head, err = marshalWireJSON(w, cfg)
	} else {
		head, err = marshalWire(w, cfg)
	}
	if err != nil {
		return nil, err
	}
	d.Head = head
	if cfg.sealer != nil {
		if err := d.seal(cfg.sealer, sid); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Saved records that a store saved d: r's version becomes d.Version and
// its next [Run.Delta] starts from there. A store calls it after the write
// succeeded, and only then.
//
// A delta of another run, or one not taken at the run's current version
// (already recorded, or stale), changes nothing: recording it again would
// drop positions recorded since from the next delta.
func (r *Run) Saved(d *Delta) {
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
// [Run.SetSessionHistory]) is checked for its shape only: the run comes
// back with its context pending ([Run.HistoryRef]) until
// [Run.ResolveHistory] is given the session's items.
//
// A head without a delta record is a whole checkpoint written by
// [Marshal] (a store's earlier format): it is decoded as such, and the
// run's next save is a full one.
func Assemble(head, context []byte, items []Piece, opts ...UnmarshalOption) (*Run, error) {
	return assemble(head, context, items, true, opts)
}

// assemble is Assemble, which decodes the whole on the fast path when fast
// is set (false for the benchmarks' reference).
func assemble(head, context []byte, items []Piece, fast bool, opts []UnmarshalOption) (*Run, error) {
	cfg := newUnmarshalConfig(opts)
	switch {
	case cfg.sealer != nil:
		var err error
		if head, context, items, err = openStored(cfg.sealer, head, context, items); err != nil {
			return nil, err
		}
	case isSealedHead(head):
		return nil, &DecodeError{Path: "$.schema", Err: fmt.Errorf("%w: %w", ErrMalformed, ErrSealed)}
	}
	if int64(len(head)) > cfg.maxSize {
		return nil, &DecodeError{Path: "$", Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(head), cfg.maxSize)}
	}
	var env wireEnvelope
	if err := decodeStrict(head, &env, "$"); err != nil {
		return nil, err
	}
	if cfg.keys != nil && env.Schema == SchemaName {
		if err := verify(cfg.keys, env.Signature, env.Schema, env.Version, env.Run); err != nil {
			return nil, err
		}
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(env.Run, &payload); err != nil || payload == nil {
		return Unmarshal(head, opts...) // reports what is wrong with it
	}
	var ext map[string]json.RawMessage
	if raw, ok := payload[keyExtension]; ok {
		if err := json.Unmarshal(raw, &ext); err != nil {
			return Unmarshal(head, opts...)
		}
	}
	recRaw, ok := ext[deltaKey]
	if !ok {
		if len(items) > 0 || context != nil {
			return nil, invalid("$.run.extension", "stored items without a delta record in the head")
		}
		r, err := Unmarshal(head, opts...)
		if err != nil {
			return nil, err
		}
		return r, nil // a whole checkpoint: the next save is full
	}
	var rec deltaRecord
	if err := decodeStrict(recRaw, &rec, "$.run.extension."+deltaKey); err != nil {
		return nil, err
	}
	tampered := func(what string) error {
		if cfg.keys != nil {
			keyID := ""
			if env.Signature != nil {
				keyID = env.Signature.KeyID
			}
			return &SignatureError{KeyID: keyID, Reason: what + " do not match the signed head"}
		}
		return invalid("$.run.extension."+deltaKey, "%s do not match the head", what)
	}

	// Verify the stored items against the head's chain, save by save.
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b Piece) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(a.Seq, b.Seq))
	})
	if len(sorted) > 0 && sorted[0].Version < rec.Full {
		return nil, tampered("stored items")
	}
	digest := chainAll(rec.Full, sorted)
	if hex.EncodeToString(digest[:]) != rec.Digest {
		return nil, tampered("stored items")
	}
	if context == nil {
		context = []byte("[]")
	}
	ctxDigest := sha256.Sum256(context)
	if hex.EncodeToString(ctxDigest[:]) != rec.ContextDigest {
		return nil, tampered("stored context")
	}

	// Splice the guardrail results, the items and the context into the
	// head and decode the whole.
	slices.SortFunc(sorted, func(a, b Piece) int { return cmp.Compare(a.Seq, b.Seq) })
	firstItem, _ := slices.BinarySearchFunc(sorted, 1, func(p Piece, seq int64) int { return cmp.Compare(p.Seq, seq) })
	firstGuard, _ := slices.BinarySearchFunc(sorted, callSeqBase, func(p Piece, seq int64) int { return cmp.Compare(p.Seq, seq) })
	calls := sorted[:firstGuard]
	slices.Reverse(calls) // callSeqBase-1, -2, …: the order they were recorded in
	for i, p := range calls {
		if p.Seq != callSeqBase-int64(i+1) {
			return nil, tampered("stored model calls")
		}
	}
	if len(calls) > 0 {
		payload[keyModelCalls] = jsonList(calls)
	}
	guards := sorted[firstGuard:firstItem]
	slices.Reverse(guards) // -1, -2, …: the order they were recorded in
	for i, p := range guards {
		if p.Seq != -int64(i+1) {
			return nil, tampered("stored guardrail results")
		}
	}
	payload[keyGuardrails] = jsonList(guards)
	payload[keyItems] = jsonList(sorted[firstItem:])
	var ref *historyRef
	if isRefPiece(context) {
		// The session history, by reference: the run's context is pending
		// until the session's items are read (history.go).
		var sid string
		_ = json.Unmarshal(payload[keySession], &sid) // a bad session ID fails the decode below
		var err error
		if ref, err = decodeRefPiece(context, sid); err != nil {
			return nil, err
		}
		context = []byte("[]")
	}
	payload[keyContext] = context
	delete(ext, deltaKey)
	if len(ext) == 0 {
		delete(payload, keyExtension)
	} else {
		raw, err := json.Marshal(ext)
		if err != nil {
			return nil, fmt.Errorf("state: assemble: %w", err)
		}
		payload[keyExtension] = raw
	}
	// The document is written as bytes: json.Marshal would validate and
	// compact every item's JSON again, twice, which costs more than the
	// decoding after it.
	doc := make([]byte, 0, len(head)+len(context)+piecesLen(sorted)+64)
	doc = append(doc, '{')
	doc = appendMember(doc, envFields.Name("Schema"), appendString(nil, env.Schema))
	doc = append(doc, ',')
	doc = appendMember(doc, envFields.Name("Version"), strconv.AppendInt(nil, int64(env.Version), 10))
	doc = append(doc, ',')
	doc = appendMember(doc, envFields.Name("Run"), nil)
	doc = append(doc, '{')
	for i, k := range slices.Sorted(maps.Keys(payload)) {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = appendMember(doc, k, payload[k])
	}
	doc = append(doc, '}', '}')
	inner := cfg
	inner.keys = nil // the head was verified; the items by its digest
	inner.maxSize = max(cfg.maxSize, int64(len(doc)))
	var r *Run
	var err error
	if fast {
		var done, gaveUp bool
		if r, done, gaveUp, err = unmarshalFast(doc, nil); !done {
			r, err = unmarshalJSON(doc, &inner, !gaveUp)
		}
	} else {
		r, err = unmarshalJSON(doc, &inner, false)
	}
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.journaling = true
	r.base = baseline{known: true, version: r.version, full: rec.Full, digest: digest, ctxGen: r.ctxGen, ctxDigest: ctxDigest, guards: len(r.guards), calls: len(r.calls)}
	if ref != nil {
		if r.ctxFrom != 0 {
			r.mu.Unlock()
			return nil, invalid("$.run.context_from", "%d, but a session history comes before every item", r.ctxFrom)
		}
		r.ctxRef, r.ctxPending = true, ref
	}
	r.mu.Unlock()
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
// buffer when it can be (appendWireItem).
func itemPiece(it Item) ([]byte, error) {
	w := wireItemOf(it)
	if data, ok := appendWireItem(make([]byte, 0, 48+len(w.Name)+len(w.Raw)), w); ok {
		return data, nil
	}
	return json.Marshal(w)
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
