package encrypt

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

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
	raw := it.AppendRaw(sc.raw[:0])
	sc.raw = raw
	out := append(sc.out[:0], '{')
	err := members(raw, func(key, value []byte) {
		for _, m := range clearMembers {
			if string(key) == m {
				if len(out) > 1 {
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
		return state.Item{}, &SealError{SessionID: sid, RunID: runID, What: "item", Seq: it.Seq(), Err: err}
	}
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, runMember...)
	out = appendString(out, runID)
	clear := len(out)
	sc.ad = itemAD(sc.ad[:0], sid, it.Seq(), it.Kind(), it.Name(), out)
	sc.ct = dk.seal(sc, sc.ct[:0], sc.ad, raw)
	out = append(out, sealedMember...)
	out = base64.RawStdEncoding.AppendEncode(out, sc.ct)
	out = append(out, '"', '}')
	sc.out = out
	sealed, err := state.ParseItem(it.Kind(), out) // copies out
	if err != nil || sealed.CallID() != it.CallID() {
		return state.Item{}, &SealError{SessionID: sid, RunID: runID, What: "item", Seq: it.Seq(),
			Err: fmt.Errorf("its routing fields do not survive sealing (%.40s): %w", out[:clear], ErrUnsealed)}
	}
	return sealed.WithSeq(it.Seq()).WithName(it.Name()), nil
}

// openItem returns the item stored sealed; runID, when not "", is the run
// the store says it belongs to, which must be the sealed one.
func openItem(dk *dataKey, sid, runID string, stored state.Item) (state.Item, error) {
	sc := dk.get()
	defer dk.put(sc)
	raw := stored.AppendRaw(sc.raw[:0])
	sc.raw = raw
	fail := func(err error) (state.Item, error) {
		return state.Item{}, &SealError{SessionID: sid, RunID: runID, What: "item", Seq: stored.Seq(), Err: err}
	}
	i := bytes.LastIndex(raw, []byte(sealedMember))
	if i < 0 || !bytes.HasSuffix(raw, []byte(`"}`)) {
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
	sc.ad = itemAD(sc.ad[:0], sid, stored.Seq(), stored.Kind(), stored.Name(), clear)
	pt, err := dk.open(nil, true, sc.ad, ct)
	if err != nil {
		return fail(err)
	}
	it, err := state.ParseItem(stored.Kind(), pt) // copies pt
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrTampered, err))
	}
	return it.WithSeq(stored.Seq()).WithName(stored.Name()), nil
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
