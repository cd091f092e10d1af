package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"hash/maphash"
	"slices"
	"sync"
	"weak"
)

// History by reference.
//
// The context most runs follow is their session's history: the items that
// persistence read from the session before the first model call. Those
// items are already stored, in the session, so a checkpoint that copied
// them into every run would make storage grow with the conversation times
// the number of runs, and every run's first save with the conversation.
// A run whose context came from its session (runcore.SetSessionHistory)
// records a reference instead: the session, the number of items, the
// session's write stamp when they were read, and a digest of them. They
// are the last Count items of the session placed before the run's own
// items among those written before the stamp, which a session store reads
// from its index (session.Store's ListBefore), and the digest proves on
// load that they are still the items the run started from. The stamp
// keeps the reference fixed while an earlier run of the session goes on:
// the items that run writes later sort before this run's own, but carry
// later stamps.
//
// A [Delta] writes the reference as the run's context piece; [Assemble]
// returns a run whose context is pending until [Run.ResolveHistory] is
// given the items (the persistence middleware does it on resume, before
// anything runs, as do the stores that hold the session themselves).
// [Marshal] stays a complete, portable document: it writes the items
// themselves, with a note that they came from the session, so a run
// unmarshaled and saved again refers to them again.

// historyKey is the extension key under which [Marshal] notes that the
// run's context is its session's history. [Unmarshal] removes it.
const historyKey = "turnkit.history"

// historyRef is the reference a [Delta] writes in place of the context:
// the session, how many of its items before the run, the session's write
// stamp they were read at (0 in a reference of the earlier form, which
// has none: no filter), and, as a stored piece, the SHA-256 of their JSON
// as [Marshal] would write the context.
type historyRef struct {
	Session string `json:"session"`
	Count   int    `json:"count"`
	Stamp   int64  `json:"stamp,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// setSessionHistory sets the context the run's items follow to items and
// records that they are its session's history, read at the write stamp
// stamp (runcore.SetSessionHistory). The run keeps items, capped at their
// length, not a copy, and never writes into them: a session store's read
// hands out new values or, from a session.Cache, the cached items that
// other runs share, and copying a long conversation's history at every
// run's start made each message cost O(the conversation) twice over.
func (r *Run) setSessionHistory(items []Item, stamp int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessionID == "" {
		return fmt.Errorf("state: run %s: session history without a session: %w", r.id, ErrInvalid)
	}
	if stamp < 0 {
		return fmt.Errorf("state: run %s: session history at stamp %d: %w", r.id, stamp, ErrInvalid)
	}
	if err := r.setHistoryLocked(items, true); err != nil {
		return err
	}
	r.ctxRef, r.ctxStamp = true, stamp
	return nil
}

// HistoryRef reports whether the run's context is its session's history
// (runcore.SetSessionHistory), and if so which: the last count items of
// session sessionID placed before the run's own items. pending reports
// that the run came from a store's pieces ([Assemble]) and its context
// has not been read yet: [Run.ResolveHistory] must be given those items
// before the run can go on.
func (r *Run) HistoryRef() (sessionID string, count int, pending, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.ctxPending != nil:
		return r.ctxPending.Session, r.ctxPending.Count, true, true
	case r.ctxRef:
		return r.sessionID, len(r.context), false, true
	}
	return "", 0, false, false
}

// HistoryStamp returns the session's write stamp of the run's history
// reference (see runcore.SetSessionHistory): its items are the last count
// placed before the run's own among those written before it. It is 0
// when the run has no reference, or one without a stamp (a checkpoint of
// an earlier version): the items are then read without that filter.
func (r *Run) HistoryStamp() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.ctxPending != nil:
		return r.ctxPending.Stamp
	case r.ctxRef:
		return r.ctxStamp
	}
	return 0
}

// ResolveHistory gives a run whose context is pending (see
// [Run.HistoryRef]) the items it refers to, as a session store reads them.
// They must be exactly the items the run started from: their number and
// the digest recorded when the run was saved must match, or it fails with
// a [*HistoryError] wrapping [ErrHistoryChanged] (the session was popped,
// cleared, or written behind the run's back) and changes nothing. The
// items are copied. On a run whose context is not pending it does
// nothing.
func (r *Run) ResolveHistory(items []Item) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := r.ctxPending
	if ref == nil {
		return nil
	}
	herr := func(format string, args ...any) error {
		return &HistoryError{RunID: r.id, SessionID: ref.Session, Count: ref.Count, Reason: fmt.Sprintf(format, args...), Err: ErrHistoryChanged}
	}
	if len(items) != ref.Count {
		return herr("the session holds %d of them", len(items))
	}
	digest, err := historyDigest(items)
	if err != nil {
		return fmt.Errorf("state: run %s: resolve history: %w", r.id, err)
	}
	if digest != ref.Digest {
		return herr("they are not the items the run started from")
	}
	r.context = slices.Clone(items)
	r.ctxStamp, r.ctxPending = ref.Stamp, nil
	return nil
}

// digestChunk is how many bytes of JSON historyDigest writes into the
// hash at a time.
const digestChunk = 16 << 10

// historyDigest returns the SHA-256 in hex of the JSON of items as
// [Marshal] writes a context. It streams the items' JSON through one
// buffer of about digestChunk bytes (appendItem), so a run's first save
// does not build the JSON of its whole history, nor a wire value an item:
// at 10 000 items that was an allocation an item and 2 MB a run start. An
// item encoding/json would refuse gets its error.
//
// When the digests memo holds the hash of a first part of the same array
// of items (the previous message's history, which the session's cache
// handed out and has since grown in place), it hashes only the items
// after that part: a message on a 10 000-item session hashed about 2 MB
// of JSON at its first save, 93% of the message's CPU.
func historyDigest(items []Item) (string, error) {
	h, from := digests.take(items)
	if h == nil {
		h = sha256.New()
		h.Write(openBracket)
	}
	buf := make([]byte, 0, min(digestChunk, 256*(len(items)-from))+128)
	for i := from; i < len(items); i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		var ok bool
		if buf, ok = appendItem(buf, items[i]); !ok {
			if _, err := json.Marshal(wireItemOf(items[i])); err != nil {
				return "", err
			}
			return "", fmt.Errorf("item %d (seq %d) has no JSON encoding", i, items[i].Seq())
		}
		if len(buf) >= digestChunk {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	end, err := h.(hash.Cloner).Clone()
	if err != nil {
		return "", fmt.Errorf("state: history digest: %w", err)
	}
	digests.keep(items, h)
	end.Write(closeBracket)
	// The sum and its hex go into buf, which has room for both: its hex
	// string is the only other allocation.
	sum := end.Sum(buf[:0])
	return string(hex.AppendEncode(sum[len(sum):], sum)), nil
}

// The brackets around a list's JSON, as arguments of a hash's Write that
// do not escape to the heap at each call.
var openBracket, closeBracket = []byte{'['}, []byte{']'}

// digests is the memo of [historyDigest]: per array of items, the hash
// state after "[" and the JSON of its first n items. An array is known by
// a weak pointer to its first element, so the memo keeps no history alive
// and an array freed and another made at its address are two keys. The
// elements before n are trusted to be the ones hashed: the items a run
// has as its context are never written in place (a run never writes them,
// and a session's cache never writes an element it handed out, see
// session.Cache). As a check on that, the last of the n elements must
// still be the same item: its position and a hash of its JSON (not a
// pointer to it, which would keep the array its JSON was decoded into
// alive with the memo).
var digests = digestMemo{m: make(map[weak.Pointer[Item]]digestState)}

// maxDigests bounds the memo: about one entry per conversation active in
// the process, a few hundred bytes each.
const maxDigests = 1024

type digestMemo struct {
	mu sync.Mutex
	m  map[weak.Pointer[Item]]digestState
}

type digestState struct {
	n       int
	lastSeq int64
	lastRaw uint64 // maphash of the last item's JSON
	h       hash.Hash
}

// take returns the memo's hash of a first part of items and the number of
// items it covers, or nil, taking it out of the memo: a digest computed
// at the same time over the same array starts from nothing.
func (m *digestMemo) take(items []Item) (hash.Hash, int) {
	if len(items) == 0 {
		return nil, 0
	}
	key := weakFirst(items)
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.m[key]
	if !ok {
		return nil, 0
	}
	delete(m.m, key)
	if st.n > len(items) || items[st.n-1].seq != st.lastSeq || rawSum(items[st.n-1].raw) != st.lastRaw {
		return nil, 0
	}
	return st.h, st.n
}

// keep records h as the hash after all of items.
func (m *digestMemo) keep(items []Item, h hash.Hash) {
	if len(items) == 0 {
		return
	}
	last := &items[len(items)-1]
	st := digestState{n: len(items), lastSeq: last.seq, lastRaw: rawSum(last.raw), h: h}
	key := weakFirst(items)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.m) >= maxDigests {
		// Entries of freed arrays go first, then any (a miss costs one
		// digest from the start) down to three quarters, so that with more
		// live conversations than entries the sweep runs once in a quarter
		// of the memo's inserts, not at each.
		for k := range m.m {
			if k.Value() == nil {
				delete(m.m, k)
			}
		}
		for k := range m.m {
			if len(m.m) <= maxDigests*3/4 {
				break
			}
			delete(m.m, k)
		}
	}
	m.m[key] = st
}

// weakFirst returns the memo's key of a non-empty array of items.
func weakFirst(items []Item) weak.Pointer[Item] { return weak.Make(&items[0]) }

// rawSum returns a hash of an item's JSON for the memo's check.
func rawSum(raw []byte) uint64 { return maphash.Bytes(digestSeed, raw) }

var digestSeed = maphash.MakeSeed()

// contextPiece returns what a delta stores as the run's context: the
// items' JSON, or the reference to them. Called with r.mu held, on a
// snapshot.
func contextPiece(sessionID string, ctx []Item, ref bool, stamp int64, pending *historyRef) ([]byte, error) {
	switch {
	case pending != nil:
		return json.Marshal(pending)
	case ref:
		digest, err := historyDigest(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(historyRef{Session: sessionID, Count: len(ctx), Stamp: stamp, Digest: digest})
	}
	return json.Marshal(wireItems(ctx))
}

// isRefPiece reports whether a stored context piece is a reference rather
// than a list of items.
func isRefPiece(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// decodeRefPiece decodes a stored context reference strictly.
func decodeRefPiece(data []byte, sessionID string) (*historyRef, error) {
	const path = "$.context"
	var ref historyRef
	if err := decodeStrict(data, &ref, path); err != nil {
		return nil, err
	}
	switch {
	case ref.Session == "":
		return nil, invalid(path+".session", "empty")
	case ref.Session != sessionID:
		return nil, invalid(path+".session", "%q, but the run's session is %q", ref.Session, sessionID)
	case ref.Count < 0:
		return nil, invalid(path+".count", "%d, want at least 0", ref.Count)
	case ref.Stamp < 0:
		return nil, invalid(path+".stamp", "%d, want at least 0", ref.Stamp)
	}
	if d, err := hex.DecodeString(ref.Digest); err != nil || len(d) != sha256.Size {
		return nil, invalid(path+".digest", "not a SHA-256 in hex")
	}
	return &ref, nil
}

// noteHistory is the note [Marshal] writes under historyKey: the context
// it writes whole came from the session, read at the write stamp Stamp
// (absent in a note of an earlier version, and for a reference without
// one).
type noteHistory struct {
	Session string `json:"session"`
	Count   int    `json:"count"`
	Stamp   int64  `json:"stamp,omitempty"`
}

// takeHistoryNote reads and removes the note of a decoded run's
// extension, and checks that it describes the decoded context.
func (r *Run) takeHistoryNote() error {
	raw, ok := r.extension[historyKey]
	if !ok {
		return nil
	}
	const path = "$.run.extension." + historyKey
	var n noteHistory
	if err := decodeStrict(raw, &n, path); err != nil {
		return err
	}
	switch {
	case r.sessionID == "" || n.Session != r.sessionID:
		return invalid(path+".session", "%q, but the run's session is %q", n.Session, r.sessionID)
	case n.Count != len(r.context):
		return invalid(path+".count", "%d, but the context holds %d items", n.Count, len(r.context))
	case r.ctxFrom != 0:
		return invalid(path, "a context replaced by a handoff is not the session's history")
	case n.Stamp < 0:
		return invalid(path+".stamp", "%d, want at least 0", n.Stamp)
	}
	delete(r.extension, historyKey)
	if len(r.extension) == 0 {
		r.extension = nil
	}
	r.ctxRef, r.ctxStamp = true, n.Stamp
	return nil
}
