package state

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/turnkit/turnkit/internal/prefixed"
)

// A Sealer encrypts what a [Store] keeps of a run: the parts of each
// [Delta] (its head, its pieces, its context), so that a checkpoint is
// ciphertext at rest whatever the store. It is the hook of
// [WithSealer]; package session/encrypt implements it with AES-GCM under
// per-session data keys.
//
// Seal appends the ciphertext of plaintext bound to part to dst and
// returns the extended buffer; Open appends the plaintext of a ciphertext
// Seal made for the same part. Open given another part (another session,
// run, position, version or kind of part) must fail, as must Open of an
// edited ciphertext, with an error that says why (the implementation's
// sentinels). Neither may keep plaintext, sealed or the result beyond the
// call, and dst may not overlap the input. Implementations must be safe
// for concurrent use.
type Sealer interface {
	Seal(dst []byte, part Part, plaintext []byte) ([]byte, error)
	Open(dst []byte, part Part, sealed []byte) ([]byte, error)
}

// A PartKind says which part of a stored checkpoint a [Part] is.
type PartKind uint8

// The parts of a checkpoint a store keeps.
const (
	PartHead    PartKind = iota + 1 // a Delta's Head
	PartPiece                       // one of a Delta's Items (an item or a guardrail result)
	PartContext                     // a Delta's Context
)

// String returns "head", "piece" or "context".
func (k PartKind) String() string {
	switch k {
	case PartHead:
		return "head"
	case PartPiece:
		return "piece"
	case PartContext:
		return "context"
	}
	return "PartKind(" + strconv.Itoa(int(k)) + ")"
}

// A Part names one stored part of a run's checkpoint: what a [Sealer]
// binds its ciphertext to, so that a part moved to another run, position
// or version fails to open.
type Part struct {
	SessionID string // the run's session; "" when it has none
	RunID     string
	Kind      PartKind
	Seq       int64 // a piece's position (negative for a guardrail result); 0 otherwise
	Version   int64 // the version of the save that wrote a head or a piece; 0 for a context
	Full      int64 // a head's last full save; 0 otherwise
}

// A SealOption is both a [MarshalOption] and an [UnmarshalOption]: give
// it to a store's WithCodec on both sides.
type SealOption struct{ s Sealer }

// WithSealer makes [Run.Delta] seal every part of the delta with s
// (after signing, so a signed checkpoint stays signed inside its
// ciphertext) and [Assemble] open them before anything else is read; a
// stored checkpoint that is not sealed then fails with [ErrUnsealed]
// rather than be read as plaintext. The head keeps the run's ID, session
// ID, version and last full save in the clear (bound to the ciphertext),
// so [HeadVersions] still reads it. [Marshal] and [Unmarshal], the
// portable document, are not sealed. A nil s turns sealing off.
func WithSealer(s Sealer) SealOption { return SealOption{s: s} }

func (o SealOption) applyMarshal(c marshalConfig) marshalConfig {
	c.sealer = o.s
	return c
}

func (o SealOption) applyUnmarshal(c *unmarshalConfig) { c.sealer = o.s }

// WithBinaryParts makes [Run.Delta] keep a sealed delta's pieces and
// context as bytes (a format byte, then the [Sealer]'s ciphertext), for a
// store that keeps them as bytes (a BLOB, a bytea, a Redis string),
// rather than as JSON strings of their ciphertexts' base64, which a store
// that keeps pieces inside JSON (state/filestore) needs: a third fewer
// bytes to write, and none to encode. The sealed head is bytes too: a
// format byte, its routing fields (run and session IDs, version, last
// full save) in the clear, then its ciphertext, which [HeadVersions]
// reads as it reads the JSON form. [Assemble] reads both forms, whatever
// its options, so a store that turns this on still opens the checkpoints
// it wrote before, and a run may hold pieces of both. Without a sealer
// ([WithSealer]) it changes nothing. Session/sqlite, postgres and redis
// turn it on.
func WithBinaryParts() MarshalOption {
	return marshalOptionFunc(func(c marshalConfig) marshalConfig { c.binaryParts = true; return c })
}

// Errors of sealed checkpoints.
var (
	// ErrSealed means a stored checkpoint is sealed and it was read
	// without a [Sealer] ([WithSealer]). It is wrapped by [*DecodeError].
	ErrSealed = errors.New("state: checkpoint is sealed")
	// ErrUnsealed means a stored checkpoint is plaintext where a
	// [Sealer] requires ciphertext. It is wrapped by [*DecodeError].
	ErrUnsealed = errors.New("state: checkpoint is not sealed")
)

// SealedSchema is the schema name of a sealed head.
const SealedSchema = "turnkit.sealed"

// sealedHead is a sealed head as a store keeps it: the routing fields in
// the clear (in the shape [HeadVersions] reads) and the ciphertext.
type sealedHead struct {
	Schema string        `json:"schema"`
	Run    sealedHeadRun `json:"run"`
	Sealed string        `json:"sealed"`
}

type sealedHeadRun struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id,omitempty"`
	Version   int64  `json:"version"`
	Extension struct {
		Delta struct {
			Full int64 `json:"full"`
		} `json:"turnkit.delta"`
	} `json:"extension"`
}

// seal replaces d's parts with their ciphertexts under s. A pooled
// scratch buffer takes the head's ciphertext, and with base64 parts each
// piece's and the context's in turn; the parts end up all in one buffer
// sized for them, as binary parts (binary: a format byte, then the
// ciphertext, sealed in place) or as JSON strings of their base64: each
// is a full slice of it, so an append to one never writes into the next,
// and a ciphertext longer than sealOverhead allows only grows the buffer
// (the parts cut before keep the array they were cut from).
func (d *Delta) seal(s Sealer, sessionID string, binary bool) error {
	scratch := sealScratch.Get().(*[]byte)
	defer func() {
		if cap(*scratch) <= maxPooledScratch {
			sealScratch.Put(scratch)
		}
	}()
	full := d.next.full
	ct, err := s.Seal((*scratch)[:0], Part{SessionID: sessionID, RunID: d.RunID, Kind: PartHead, Version: d.Version, Full: full}, d.Head)
	*scratch = ct[:0]
	if err != nil {
		return fmt.Errorf("state: seal head of run %s: %w", d.RunID, err)
	}
	var out []byte
	defer func() { d.sealed = out }() // what Release hands back, the last array out grew into
	if binary {
		out = d.sealBuffer(binaryHeadRoom + len(d.RunID) + len(sessionID) + len(ct) + d.sealedSize(binary))
		out, d.Head = appendBinaryHead(out, d.RunID, sessionID, d.Version, full, ct)
	} else {
		out = d.sealBuffer(sealedHeadRoom + len(d.RunID) + len(sessionID) + base64.RawStdEncoding.EncodedLen(len(ct)) + d.sealedSize(binary))
		out, d.Head = appendSealedHead(out, d.RunID, sessionID, d.Version, full, ct)
	}
	for i, p := range d.Items {
		part := Part{SessionID: sessionID, RunID: d.RunID, Kind: PartPiece, Seq: p.Seq, Version: p.Version}
		if binary {
			if out, d.Items[i].Data, err = appendBinaryPart(out, s, part, p.Data); err != nil {
				return fmt.Errorf("state: seal piece %d of run %s: %w", p.Seq, d.RunID, err)
			}
			continue
		}
		ct, err = s.Seal(ct[:0], part, p.Data)
		*scratch = ct[:0]
		if err != nil {
			return fmt.Errorf("state: seal piece %d of run %s: %w", p.Seq, d.RunID, err)
		}
		out, d.Items[i].Data = appendSealedString(out, ct)
	}
	if d.Context != nil {
		part := Part{SessionID: sessionID, RunID: d.RunID, Kind: PartContext}
		if binary {
			if out, d.Context, err = appendBinaryPart(out, s, part, d.Context); err != nil {
				return fmt.Errorf("state: seal context of run %s: %w", d.RunID, err)
			}
			return nil
		}
		ct, err = s.Seal(ct[:0], part, d.Context)
		*scratch = ct[:0]
		if err != nil {
			return fmt.Errorf("state: seal context of run %s: %w", d.RunID, err)
		}
		out, d.Context = appendSealedString(out, ct)
	}
	return nil
}

// A sealBuf is a buffer of a sealed delta's parts in [sealBufs].
type sealBuf struct{ b []byte }

// sealBufs holds the buffers of sealed deltas' parts that stores handed
// back ([Delta.Release]). It has no New: a store that never hands its
// deltas back (one that keeps their bytes, as state/memstore does) finds
// it empty and gets a buffer made to size, as before there was a pool,
// rather than a buffer and a box for it.
var sealBufs sync.Pool

// sealBuffer returns an empty buffer of at least size bytes for d's
// sealed parts: one a store handed back, or a new one.
func (d *Delta) sealBuffer(size int) []byte {
	box, _ := sealBufs.Get().(*sealBuf)
	if box == nil {
		return make([]byte, 0, size)
	}
	d.box = box
	if cap(box.b) < size {
		box.b = make([]byte, 0, size)
	}
	return box.b[:0]
}

// Release hands the buffer that d's sealed parts (its Head, its Items'
// Data and its Context) were written into back for the next sealed
// delta to reuse, which saves an allocation the size of the parts on
// every save. A store may call it once it wrote d and keeps none of its
// bytes (a database driver that copied them into its own memory or
// request); after it, d's parts must not be read, since another delta's
// parts may be written over them. A store that keeps the bytes (in
// memory) must not call it. It does nothing for a delta that was not
// sealed ([WithSealer]), and nothing the second time.
func (d *Delta) Release() {
	if d == nil || d.sealed == nil {
		return
	}
	box := d.box
	if box == nil {
		box = new(sealBuf)
	}
	box.b = d.sealed[:0]
	d.sealed, d.box = nil, nil
	d.Head, d.Items, d.Context = nil, nil, nil
	if cap(box.b) <= maxPooledScratch {
		sealBufs.Put(box)
	}
}

// sealScratch holds the buffers [Delta.seal] takes each ciphertext into
// before its base64 is written; one larger than maxPooledScratch (a
// large handoff context) is left to the collector.
var sealScratch = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledScratch = 64 << 10

// appendSealedHead appends the sealed head of ciphertext ct to buf, in
// the shape json.Marshal of sealedHead writes, which isSealedHead and
// HeadVersions read, and returns the extended buffer and the head as a
// full slice of it.
func appendSealedHead(buf []byte, runID, sessionID string, version, full int64, ct []byte) (out, head []byte) {
	start := len(buf)
	buf = append(buf, sealedPrefix...)
	buf = append(buf, `,"run":{"id":`...)
	buf = appendString(buf, runID)
	if sessionID != "" {
		buf = append(buf, `,"session_id":`...)
		buf = appendString(buf, sessionID)
	}
	buf = append(buf, `,"version":`...)
	buf = strconv.AppendInt(buf, version, 10)
	buf = append(buf, `,"extension":{"turnkit.delta":{"full":`...)
	buf = strconv.AppendInt(buf, full, 10)
	buf = append(buf, `}}},"sealed":"`...)
	buf = base64.RawStdEncoding.AppendEncode(buf, ct)
	buf = append(buf, '"', '}')
	return buf, buf[start:len(buf):len(buf)]
}

// binaryHead is the format byte of a sealed head kept as bytes
// ([WithBinaryParts]): no JSON value starts with it, so it is told apart
// from the JSON form (sealedPrefix), which every sealed head had before
// and which a store without binary parts keeps. After it, in the clear,
// the routing fields the JSON form holds: the run's ID and the session's,
// each after its uvarint length, the version and the last full save as
// varints; then the [Sealer]'s ciphertext, bound to them as the JSON
// form's is. A head of 779 bytes took 1 260 sealed as JSON (the
// ciphertext's base64 and the members' names), about 870 as bytes.
const binaryHead = 0x02

// appendBinaryHead appends the binary sealed head of ciphertext ct to
// buf and returns the extended buffer and the head as a full slice of it.
func appendBinaryHead(buf []byte, runID, sessionID string, version, full int64, ct []byte) (out, head []byte) {
	start := len(buf)
	buf = append(buf, binaryHead)
	buf = prefixed.Append(buf, runID)
	buf = prefixed.Append(buf, sessionID)
	buf = binary.AppendVarint(buf, version)
	buf = binary.AppendVarint(buf, full)
	buf = append(buf, ct...)
	return buf, buf[start:len(buf):len(buf)]
}

// binaryHeadRoom is what appendBinaryHead writes around the IDs and the
// ciphertext: the format byte and four varints.
const binaryHeadRoom = 1 + 4*binary.MaxVarintLen64

// readBinaryHead reads a head appendBinaryHead wrote; false if it is not
// one.
func readBinaryHead(head []byte) (runID, sessionID string, version, full int64, ct []byte, ok bool) {
	if len(head) == 0 || head[0] != binaryHead {
		return "", "", 0, 0, nil, false
	}
	rest := head[1:]
	field := func() (string, bool) {
		f, r, ok := prefixed.Cut(rest)
		rest = r
		return string(f), ok
	}
	number := func() (int64, bool) {
		v, k := binary.Varint(rest)
		if k <= 0 {
			return 0, false
		}
		rest = rest[k:]
		return v, true
	}
	var ok1, ok2, ok3, ok4 bool
	runID, ok1 = field()
	sessionID, ok2 = field()
	version, ok3 = number()
	full, ok4 = number()
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return "", "", 0, 0, nil, false
	}
	return runID, sessionID, version, full, rest, true
}

// sealedHeadRoom is what appendSealedHead writes around the run ID, the
// session ID and the ciphertext's base64: the members' names, four
// quotes, two numbers of up to 20 digits. (96, before, left no room for
// the last members: the head's base64 grew the whole buffer, one more
// allocation and copy per sealed save.) IDs that JSON escapes take more,
// and only grow the buffer.
const sealedHeadRoom = len(sealedPrefix) + len(`,"run":{"id":`) + len(`,"session_id":`) + len(`,"version":`) +
	len(`,"extension":{"turnkit.delta":{"full":`) + len(`}}},"sealed":"`) + len(`"}`) + 4 + 2*20

// sealOverhead is what the buffer of a delta's sealed parts allows for
// each ciphertext beyond its plaintext: session/encrypt's format byte,
// nonce and tag (29 bytes) with room to spare.
const sealOverhead = 64

// sealedSize is the room the pieces and the context of d take sealed
// (as binary parts, or as JSON strings of their ciphertexts'
// base64: appendSealedString) when each ciphertext is at most
// sealOverhead bytes longer than its plaintext.
func (d *Delta) sealedSize(binary bool) int {
	size := func(n int) int {
		if binary {
			return 1 + n + sealOverhead
		}
		return base64.RawStdEncoding.EncodedLen(n+sealOverhead) + 2
	}
	n := 0
	for _, p := range d.Items {
		n += size(len(p.Data))
	}
	if d.Context != nil {
		n += size(len(d.Context))
	}
	return n
}

// appendSealedString appends ct as a JSON string (base64) to buf, so that
// a store that keeps a piece as JSON (state/filestore) keeps it as it is,
// and returns the extended buffer and the string as a full slice of it.
func appendSealedString(buf, ct []byte) (out, str []byte) {
	start := len(buf)
	buf = append(buf, '"')
	buf = base64.RawStdEncoding.AppendEncode(buf, ct)
	buf = append(buf, '"')
	return buf, buf[start:len(buf):len(buf)]
}

// binaryPart is the format byte of a piece or context sealed as bytes
// ([WithBinaryParts]): its ciphertext follows. No JSON value starts with
// it, so it is told apart from a JSON string of base64 (which starts with
// '"', the form of every sealed part before binary parts) and from
// plaintext. Another format would take another byte.
const binaryPart = 0x01

// appendBinaryPart appends the binary part of plaintext sealed by s as
// part to buf, and returns the extended buffer and the part as a full
// slice of it.
func appendBinaryPart(buf []byte, s Sealer, part Part, plaintext []byte) (out, data []byte, err error) {
	start := len(buf)
	buf, err = s.Seal(append(buf, binaryPart), part, plaintext)
	if err != nil {
		return nil, nil, err
	}
	return buf, buf[start:len(buf):len(buf)], nil
}

// sealedPart returns the ciphertext of a stored piece or context: the
// bytes after a binary part's format byte (not copied), or the decoded
// base64 of a JSON string; false for anything else.
func sealedPart(data []byte) ([]byte, bool) {
	if len(data) > 0 && data[0] == binaryPart {
		return data[1:], true
	}
	return openString(data)
}

// openString reads a part written by appendSealedString.
func openString(data []byte) ([]byte, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return nil, false
	}
	ct, err := base64.RawStdEncoding.AppendDecode(nil, data[1:len(data)-1])
	return ct, err == nil
}

// sealedPrefix starts every sealed head: json.Marshal writes the schema
// first.
const sealedPrefix = `{"schema":"` + SealedSchema + `"`

// isSealedHead reports whether head is a sealed head, without decoding it.
func isSealedHead(head []byte) bool {
	return bytes.HasPrefix(head, []byte(sealedPrefix)) || (len(head) > 0 && head[0] == binaryHead)
}

// openStored opens what a store keeps of a sealed run with s: the head,
// the context (nil: none) and the pieces, returned in plaintext.
func openStored(s Sealer, head, context []byte, items []Piece) ([]byte, []byte, []Piece, error) {
	rid, sid, version, full, ct, ok := readBinaryHead(head)
	if len(head) > 0 && head[0] == binaryHead && !ok {
		return nil, nil, nil, &DecodeError{Path: "$", Err: fmt.Errorf("%w: a sealed head's clear fields", ErrMalformed)}
	}
	if !ok {
		var env sealedHead
		if err := json.Unmarshal(head, &env); err != nil || env.Schema != SealedSchema {
			return nil, nil, nil, &DecodeError{Path: "$", Err: fmt.Errorf("%w: %w", ErrMalformed, ErrUnsealed)}
		}
		sid, rid, version, full = env.Run.SessionID, env.Run.ID, env.Run.Version, env.Run.Extension.Delta.Full
		var err error
		if ct, err = base64.RawStdEncoding.DecodeString(env.Sealed); err != nil {
			return nil, nil, nil, &DecodeError{Path: "$.sealed", Err: fmt.Errorf("%w: not base64", ErrMalformed)}
		}
	}
	plainHead, err := s.Open(nil, Part{SessionID: sid, RunID: rid, Kind: PartHead, Version: version, Full: full}, ct)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("state: open head of run %s: %w", rid, err)
	}
	var plainCtx []byte
	if context != nil {
		ct, ok := sealedPart(context)
		if !ok {
			return nil, nil, nil, &DecodeError{Path: "$.context", Err: fmt.Errorf("%w: %w", ErrMalformed, ErrUnsealed)}
		}
		if plainCtx, err = s.Open(nil, Part{SessionID: sid, RunID: rid, Kind: PartContext}, ct); err != nil {
			return nil, nil, nil, fmt.Errorf("state: open context of run %s: %w", rid, err)
		}
	}
	plain := make([]Piece, len(items))
	for i, p := range items {
		ct, ok := sealedPart(p.Data)
		if !ok {
			return nil, nil, nil, &DecodeError{Path: "$.items", Err: fmt.Errorf("%w: piece %d: %w", ErrMalformed, p.Seq, ErrUnsealed)}
		}
		data, err := s.Open(nil, Part{SessionID: sid, RunID: rid, Kind: PartPiece, Seq: p.Seq, Version: p.Version}, ct)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("state: open piece %d of run %s: %w", p.Seq, rid, err)
		}
		plain[i] = Piece{Seq: p.Seq, Version: p.Version, Data: data}
	}
	return plainHead, plainCtx, plain, nil
}
