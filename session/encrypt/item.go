package encrypt

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/internal/prefixed"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A session item is sealed into an item of the same kind whose JSON keeps
// the members that route it in the clear (those below: what the stores
// index and what the item's kind requires) and carries the whole item,
// sealed, in one more member:
//
//	{"type":"function_call","call_id":"c1","name":"lookup","turnkit_run":"r1","turnkit_sealed":"…"}
//
// The clear part (everything before "turnkit_sealed"), the session, the
// position, the kind and the tool name the store keeps beside it are the
// ciphertext's additional data, so an edit of any of them, or a row moved
// to another session or position, fails to open.
var clearMembers = [...]string{"type", "role", "id", "call_id", "name", "server_label", "approval_request_id", "approve", "status"}

const (
	runMember    = `"turnkit_run":`
	sealedMember = `,"turnkit_sealed":"`
)

// sealItem returns the sealed form of it, an item of run runID.
func sealItem(dk *dataKey, sid, runID string, it state.Item) (state.Item, error) {
	sc := dk.get()
	defer dk.put(sc)
	out, clear, err := sealJSON(dk, sc, sc.out[:0], sid, runID, it)
	sc.out = out
	if err != nil {
		return state.Item{}, err
	}
	sealed, err := state.ParseItem(it.Kind(), out) // copies out
	if err != nil || sealed.CallID() != it.CallID() {
		return state.Item{}, &SealError{SessionID: sid, RunID: runID, What: "item", Seq: it.Seq(),
			Err: fmt.Errorf("its routing fields do not survive sealing (%.40s): %w", out[clear:], ErrUnsealed)}
	}
	return sealed.WithSeq(it.Seq()).WithName(it.Name()), nil
}

// sealJSON appends the sealed JSON of it, an item of run runID, to dst,
// working in sc; it returns the result and where its clear part starts.
func sealJSON(dk *dataKey, sc *scratch, dst []byte, sid, runID string, it state.Item) ([]byte, int, error) {
	raw := it.AppendRaw(sc.raw[:0])
	sc.raw = raw
	start := len(dst)
	out := append(dst, '{')
	err := members(raw, func(key, value []byte) {
		for _, m := range clearMembers {
			if string(key) == m {
				if len(out) > start+1 {
					out = append(out, ',')
				}
				out = append(out, '"')
				out = append(out, key...)
				out = append(out, '"', ':')
				out = append(out, value...)
				return
			}
		}
	})
	if err != nil {
		return dst, start, &SealError{SessionID: sid, RunID: runID, What: "item", Seq: it.Seq(), Err: err}
	}
	if len(out) > start+1 {
		out = append(out, ',')
	}
	out = append(out, runMember...)
	out = appendString(out, runID)
	sc.ad = itemAD(sc.ad[:0], sid, it.Seq(), it.Kind(), it.Name(), out[start:])
	sc.ct = dk.seal(sc, sc.ct[:0], sc.ad, raw)
	out = append(out, sealedMember...)
	out = base64.RawStdEncoding.AppendEncode(out, sc.ct)
	return append(out, '"', '}'), start, nil
}

// openItem returns the item stored sealed; runID, when not "", is the run
// the store says it belongs to, which must be the sealed one.
func openItem(dk *dataKey, sid, runID string, stored state.Item) (state.Item, error) {
	sc := dk.get()
	defer dk.put(sc)
	raw := stored.AppendRaw(sc.raw[:0])
	sc.raw = raw
	return openJSON(dk, sc, sid, runID, stored.Kind(), stored.Seq(), stored.Name(), raw)
}

// openJSON returns the item whose sealed JSON is raw, stored with kind,
// seq and name, working in sc; raw is only read.
func openJSON(dk *dataKey, sc *scratch, sid, runID string, kind state.Kind, seq int64, name string, raw []byte) (state.Item, error) {
	fail := func(err error) (state.Item, error) {
		return state.Item{}, &SealError{SessionID: sid, RunID: runID, What: "item", Seq: seq, Err: err}
	}
	i := bytes.LastIndex(raw, []byte(sealedMember))
	// The member's closing quote must not be the suffix's opening one
	// (`…,"turnkit_sealed":"}`): the sealed text lies between the two.
	if i < 0 || len(raw) < i+len(sealedMember)+2 || !bytes.HasSuffix(raw, []byte(`"}`)) {
		return fail(ErrUnsealed)
	}
	clear := raw[:i]
	j := bytes.LastIndex(clear, []byte(runMember))
	if j < 0 {
		return fail(ErrTampered)
	}
	if runID != "" && !sameString(clear[j+len(runMember):], runID) {
		return fail(fmt.Errorf("sealed in run %s: %w", clear[j+len(runMember):], ErrTampered))
	}
	ct, err := base64.RawStdEncoding.AppendDecode(sc.ct[:0], raw[i+len(sealedMember):len(raw)-2])
	sc.ct = ct
	if err != nil {
		return fail(ErrTampered)
	}
	sc.ad = itemAD(sc.ad[:0], sid, seq, kind, name, clear)
	pt, err := dk.open(nil, true, sc.ad, ct)
	if err != nil {
		return fail(err)
	}
	it, err := state.ParseItem(kind, pt) // copies pt
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrTampered, err))
	}
	return it.WithSeq(seq).WithName(name), nil
}

// sameString reports whether the JSON string quoted is s.
func sameString(quoted []byte, s string) bool {
	if len(quoted) >= 2 && quoted[0] == '"' && quoted[len(quoted)-1] == '"' && bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1:len(quoted)-1]) == s
	}
	var v string
	return json.Unmarshal(quoted, &v) == nil && v == s
}

// itemAD appends the additional data of a session item to dst.
func itemAD(dst []byte, sid string, seq int64, kind state.Kind, name string, clear []byte) []byte {
	dst = append(dst, "turnkit.item.v1"...)
	dst = appendField(dst, sid)
	dst = binary.BigEndian.AppendUint64(dst, uint64(seq))
	dst = append(dst, byte(kind))
	dst = appendField(dst, name)
	return append(dst, clear...)
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b, _ := json.Marshal(s) // a string: cannot fail
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// members calls fn with the key (as written, without quotes) and the raw
// value of each member of the JSON object raw, in order, without
// decoding the values.
func members(raw []byte, fn func(key, value []byte)) error {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return fmt.Errorf("item JSON is not an object")
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return fmt.Errorf("item JSON: a key expected at byte %d", i)
		}
		end, ok := skipString(raw, i)
		if !ok {
			return fmt.Errorf("item JSON: unterminated key at byte %d", i)
		}
		key := raw[i+1 : end-1]
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return fmt.Errorf("item JSON: ':' expected at byte %d", i)
		}
		i = skipSpace(raw, i+1)
		vend, ok := skipValue(raw, i)
		if !ok {
			return fmt.Errorf("item JSON: bad value at byte %d", i)
		}
		fn(key, raw[i:vend])
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		if i < len(raw) && raw[i] == '}' {
			return nil
		}
		return fmt.Errorf("item JSON: ',' or '}' expected at byte %d", i)
	}
	return fmt.Errorf("item JSON: truncated")
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	return j, j > i
}

// An itemCodec is what a backend given [Keyring] as its item codec
// (sqlite.WithItemCodec) calls: the same interface type as the backend's.
type itemCodec = session.ItemCodec

var _ itemCodec = (*Keyring)(nil)

// sealsWith reports whether the store s keeps its items through kr
// (sqlite.WithItemCodec(kr)): then the wrappers leave them to it.
func sealsWith(s any, kr *Keyring) bool {
	b, ok := s.(interface{ ItemCodec() itemCodec })
	return ok && b.ItemCodec() == itemCodec(kr)
}

// SealItem appends the stored form of it, an item of run runID of
// session sessionID, to dst: what a backend given the keyring as its item
// codec (sqlite.WithItemCodec) keeps in its item's bytes column, written
// in the backend's own buffer. It is the item sealed as bytes
// ([itemBinary]: the run in the clear, then the item's JSON sealed), not
// the JSON form [SessionStore] stores through a store without the codec:
// the backend keeps the item's kind, tool name and call ID in columns of
// their own, so nothing of the item's JSON needs to stay in the clear.
// The session's data key must be loaded ([Wrap]'s Append loads it):
// inside the backend's write it is not read from the key store.
func (k *Keyring) SealItem(_ context.Context, dst []byte, sessionID, runID string, it state.Item) ([]byte, error) {
	dk := k.cached(sessionID)
	if dk == nil || dk.erased {
		return dst, &notLoadedError{sessionID: sessionID}
	}
	sc := dk.get()
	defer dk.put(sc)
	return sealBinary(dk, sc, dst, sessionID, runID, it), nil
}

// OpenItem returns the item a backend stored as stored, with kind, seq
// and name: sealed as bytes (SealItem's form), or in the JSON form the
// wrappers write and the item codec wrote before its items were bytes,
// which still opens. runID, when not "", is the run the backend says it
// belongs to, which must be the sealed one. It fails as the wrappers'
// reads do: a [*SealError] wrapping [ErrTampered], [ErrWrongKey],
// [ErrUnsealed], [ErrErased] and the like.
func (k *Keyring) OpenItem(ctx context.Context, sessionID, runID string, kind state.Kind, seq int64, name string, stored []byte) (state.Item, error) {
	dk, err := k.key(ctx, sessionID, false)
	if err != nil {
		return state.Item{}, err
	}
	sc := dk.get()
	defer dk.put(sc)
	if len(stored) > 0 && stored[0] == itemBinary {
		return openBinary(dk, sc, sessionID, runID, kind, seq, name, stored)
	}
	return openJSON(dk, sc, sessionID, runID, kind, seq, name, stored)
}

// itemBinary is the format byte of an item sealed as bytes, the form
// [Keyring.SealItem] writes for a backend that keeps an item's bytes
// (SQLite's BLOB, PostgreSQL's bytea, a Redis string): no JSON value
// starts with it, so it is told apart from the JSON form (an object) and
// from a plain item. After it: the run's ID after its uvarint length, in
// the clear (a read that does not know the item's run binds it from
// there), then the ciphertext of the item's JSON (dataKey.seal's: the
// data key's ID, the nonce, AES-GCM's output), bound by itemBinaryAD.
//
//	0x02 | uvarint len(run) | run | 0x01 | key ID (8) | nonce (12) | ciphertext and tag
//
// An item of 129 bytes of JSON takes 166 bytes and its run's ID, where
// the JSON form took about 330: its routing members in the clear, the
// run, and the whole item sealed again in base64.
const itemBinary = 0x02

// sealBinary appends the binary form of it, an item of run runID, to dst,
// working in sc.
func sealBinary(dk *dataKey, sc *scratch, dst []byte, sid, runID string, it state.Item) []byte {
	raw := it.AppendRaw(sc.raw[:0])
	sc.raw = raw
	dst = append(dst, itemBinary)
	dst = prefixed.Append(dst, runID)
	sc.ad = itemBinaryAD(sc.ad[:0], sid, it.Seq(), it.Kind(), it.Name(), runID)
	return dk.seal(sc, dst, sc.ad, raw)
}

// openBinary returns the item whose binary form is stored, stored with
// kind, seq and name, working in sc; stored is only read.
func openBinary(dk *dataKey, sc *scratch, sid, runID string, kind state.Kind, seq int64, name string, stored []byte) (state.Item, error) {
	fail := func(err error) (state.Item, error) {
		return state.Item{}, &SealError{SessionID: sid, RunID: runID, What: "item", Seq: seq, Err: err}
	}
	rest := stored[1:]
	sealedRun, ct, ok := prefixed.Cut(rest)
	if !ok {
		return fail(ErrTampered)
	}
	if runID != "" && string(sealedRun) != runID {
		return fail(fmt.Errorf("sealed in run %q: %w", sealedRun, ErrTampered))
	}
	sc.ad = itemBinaryAD(sc.ad[:0], sid, seq, kind, name, string(sealedRun))
	pt, err := dk.open(sc.ct[:0], false, sc.ad, ct)
	if err != nil {
		return fail(err)
	}
	sc.ct = pt
	it, err := state.ParseItem(kind, pt) // copies pt
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrTampered, err))
	}
	return it.WithSeq(seq).WithName(name), nil
}

// itemBinaryAD appends the additional data of an item sealed as bytes to
// dst: its session, position, kind, tool name and run, each field
// length-prefixed, under a label of its own, so that no ciphertext of the
// JSON form (or of a checkpoint's part) opens as one of these.
func itemBinaryAD(dst []byte, sid string, seq int64, kind state.Kind, name, runID string) []byte {
	dst = append(dst, "turnkit.item.v2"...)
	dst = appendField(dst, sid)
	dst = binary.BigEndian.AppendUint64(dst, uint64(seq))
	dst = append(dst, byte(kind))
	dst = appendField(dst, name)
	return appendField(dst, runID)
}
