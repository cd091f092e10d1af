package state

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/state/internal/wire"
)

// The encoding fast path: Marshal writes the checkpoint by hand, byte for
// byte what encoding/json makes of the wire shapes (marshalWireJSON, the
// reference; codec_fast_test.go compares them): the items, which are most
// of a checkpoint, without reflection and without re-validating each
// item's JSON through a json.RawMessage, and the envelope around the run
// without encoding the run twice; the pending approvals and the decisions,
// written on every checkpoint of a paused run, are written by hand too.
// Parts that are rare or small (an elicitation or its answer, guardrail
// results, trace) go through encoding/json. Anything the fast path does not handle (an item of an
// invalid kind, a value encoding/json refuses) makes marshalWire use the
// reference, for its error.

// appendCheckpoint appends the envelope of s, signed when cfg has a key,
// without indentation, member by member as [envFields] lists them.
func appendCheckpoint(b []byte, s *snapshot, cfg *marshalConfig) ([]byte, bool) {
	ok := true
	var run []byte
	for i := range envFields.List {
		f := &envFields.List[i]
		switch i {
		case envSchema:
			b = appendKey(b, f.Name, true)
			b = appendString(b, SchemaName)
		case envVersion:
			b = appendKey(b, f.Name, false)
			b = jsonw.AppendInt(b, SchemaVersion)
		case envRun:
			b = appendKey(b, f.Name, false)
			start := len(b)
			b, ok = appendRun(b, s)
			run = b[start:]
		case envSignature:
			if cfg.key == nil {
				continue
			}
			sig := sign(cfg.keyID, cfg.key, SchemaName, SchemaVersion, run)
			b = appendKey(b, f.Name, false)
			b = appendKey(b, sigFields.List[0].Name, true)
			b = appendString(b, sig.KeyID)
			b = appendKey(b, sigFields.List[1].Name, false)
			b = appendString(b, sig.MAC)
			b = append(b, '}')
		}
		if !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendKey appends "name": after the opening brace when first, or after
// a comma.
func appendKey(b []byte, name string, first bool) []byte {
	if first {
		b = append(b, '{', '"')
	} else {
		b = append(b, ',', '"')
	}
	b = append(b, name...)
	return append(b, '"', ':')
}

const (
	// checkpointBase is room for the members every checkpoint has: their
	// names, braces and separators (some 430 bytes) and fifteen numbers
	// of up to 20 digits.
	checkpointBase = 768
	// signatureRoom is room for a signature's members and its MAC, but
	// its key ID.
	signatureRoom = 160
)

// checkpointSize returns room for s's checkpoint, signed when cfg signs:
// its buffer is made once, at this size. A checkpoint that outgrew
// its room was copied into a buffer twice as large, one allocation and a
// copy of the head on every save (a delta's head, whose record alone is
// some 200 bytes, outgrew the 512 bytes this gave every run's members
// before). The members every run has take checkpointBase; each string,
// item, record and entry its length and room for its name, quotes and
// separators; a string JSON may escape twice its length.
// TestCheckpointSize checks the room against what runs of every shape
// write.
func checkpointSize(s *snapshot, cfg *marshalConfig) int {
	n := checkpointBase + len(s.ID) + 2*len(s.Agent) + 2*len(s.SessionID) + 2*len(s.Final)
	if cfg.key != nil {
		n += signatureRoom + 2*len(cfg.keyID)
	}
	n += len(s.ownKey) + len(s.own) + 8
	for k, v := range s.Extension {
		n += 2*len(k) + len(v) + 8
	}
	for k, v := range s.Trace {
		n += 2*(len(k)+len(v)) + 8
	}
	for i := range s.Pending {
		a := &s.Pending[i]
		n += 160 + 2*(len(a.Tool)+len(a.CallID)+len(a.Arguments)+len(a.Agent)+len(a.Owner))
	}
	for i := range s.Decisions {
		d := &s.Decisions[i]
		n += 128 + 2*(len(d.Tool)+len(d.CallID)+len(d.Fingerprint)+len(d.Message)+len(d.Owner))
	}
	for i := range s.Guardrails {
		g := &s.Guardrails[i]
		n += 160 + 2*(len(g.Name)+len(g.CallID)+len(g.Owner)+len(g.Agent)+len(g.Behavior)+len(g.Message)) + len(g.Info)
	}
	for _, l := range [3][]Item{s.input, s.items, s.context} {
		for _, it := range l {
			n += 48 + len(it.raw)
			if it.kind.IsOutput() {
				n += len(it.name)
			}
		}
	}
	for i := range s.ModelCalls {
		n += modelCallSize(&s.ModelCalls[i])
	}
	return n
}

// appendRun appends json.Marshal(s.wired())'s bytes, member by member as
// [runFields] lists them, by their Go types (reached through
// [runMembers], without reflection: s stays where the caller has it),
// and false when s holds something only encoding/json handles.
func appendRun(b []byte, s *snapshot) ([]byte, bool) {
	ok := true
	w := &s.wireRun
	members := runMembers(w)
	first := true
	for i := range runFields.List {
		f := &runFields.List[i]
		if f.OmitEmpty {
			empty, known := emptyMember(members[i])
			if !known {
				return b, false
			}
			if empty && (s.own == nil || members[i] != any(&w.Extension)) {
				continue
			}
		}
		b = appendKey(b, f.Name, first)
		first = false
		switch p := members[i].(type) {
		case *string:
			b = appendString(b, *p)
		case *int:
			b = jsonw.AppendInt(b, int64(*p))
		case *int64:
			b = jsonw.AppendInt(b, *p)
		case *bool:
			b = strconv.AppendBool(b, *p)
		case *[]wireItem:
			b, ok = appendItems(b, s.listOf(p), ok)
		case *Boundary:
			m := p.members()
			b = appendInts(b, m[:], boundaryFields)
		case *Usage:
			m := p.members()
			b = appendInts(b, m[:], usageFields)
		case *[]ModelCall:
			b = appendModelCalls(b, *p)
		case *[]Approval:
			b, ok = appendApprovals(b, *p, ok)
		case *[]Decision:
			b, ok = appendDecisions(b, *p, ok)
		case *map[string]json.RawMessage:
			b, ok = appendRawMap(b, *p, s.ownKey, s.own, ok)
		case *[]GuardrailResult:
			b, ok = appendGuardrails(b, *p, ok)
		case *map[string]string:
			if *p == nil {
				b = append(b, "null"...)
			} else {
				b, ok = appendJSON(b, *p, ok)
			}
		default:
			return b, false // a member added to the run and not here
		}
	}
	return append(b, '}'), ok
}

// emptyMember reports whether encoding/json's omitempty leaves out the
// member p points to, for the types of the run's omitempty members; known
// is false for another type.
func emptyMember(p any) (empty, known bool) {
	switch p := p.(type) {
	case *string:
		return *p == "", true
	case *[]ModelCall:
		return len(*p) == 0, true
	case *map[string]string:
		return len(*p) == 0, true
	case *map[string]json.RawMessage:
		return len(*p) == 0, true
	}
	return false, false
}

// appendGuardrails appends json.Marshal(l), a list of guardrail results,
// which encoding/json writes: they are rare on a checkpoint.
func appendGuardrails(b []byte, l []GuardrailResult, ok bool) ([]byte, bool) {
	switch {
	case !ok:
		return b, false
	case l == nil:
		return append(b, "null"...), true
	case len(l) == 0:
		return append(b, "[]"...), true
	}
	return appendJSON(b, l, true)
}

// appendInts appends an object of integer fields (a [Boundary], a
// [Usage]), the members m of the fields fs lists, leaving out a zero
// omitempty one as encoding/json does.
func appendInts(b []byte, m []*int64, fs *wire.Fields) []byte {
	first := true
	for i := range fs.List {
		f := &fs.List[i]
		n := *m[i]
		if f.OmitEmpty && n == 0 {
			continue
		}
		b = appendKey(b, f.Name, first)
		first = false
		b = jsonw.AppendInt(b, n)
	}
	if first {
		b = append(b, '{')
	}
	return append(b, '}')
}

// listOf returns the item list of the snapshot whose wire list is p.
func (s *snapshot) listOf(p *[]wireItem) []Item {
	switch p {
	case &s.Input:
		return s.input
	case &s.Items:
		return s.items
	}
	return s.context
}

// appendItems appends a list of items in their wire form, as
// json.Marshal writes [wireItems] of them; ok carries the failure of an
// earlier part through.
func appendItems(b []byte, items []Item, ok bool) ([]byte, bool) {
	if !ok {
		return b, false
	}
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendItem(b, it); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// Names of the members of a wire item, for appendItem.
var (
	itemSeqKey  = itemFields.List[itemSeq].Name
	itemKindKey = itemFields.List[itemKind].Name
	itemNameKey = itemFields.List[itemName].Name
	itemRawKey  = itemFields.List[itemRaw].Name
)

// appendItem appends json.Marshal(wireItemOf(it)), and false when
// encoding/json would fail on it.
func appendItem(b []byte, it Item) ([]byte, bool) {
	if !it.kind.Valid() {
		return b, false
	}
	b = appendKey(b, itemSeqKey, true)
	b = jsonw.AppendInt(b, it.seq)
	b = appendKey(b, itemKindKey, false)
	b = append(b, '"')
	b = append(b, kindNames[it.kind]...)
	b = append(b, '"')
	if it.name != "" && it.kind.IsOutput() {
		b = appendField(b, itemNameKey, it.name)
	}
	b = appendKey(b, itemRawKey, false)
	if it.canon { // as appendRawJSON would write it, without its scan
		return append(append(b, it.raw...), '}'), true
	}
	b, ok := appendRawJSON(b, it.raw)
	return append(b, '}'), ok
}

// appendRawJSON appends raw as encoding/json writes a json.RawMessage:
// compacted, with <, >, &, U+2028 and U+2029 escaped. Items' JSON almost
// always is already so, and is then copied after one validating scan.
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), true
	}
	s := jsonscan.Scanner{B: raw}
	if s.Value(0) && s.I == len(raw) && !s.WS && s.Flags&jsonscan.StrHTML == 0 {
		return append(b, raw...), true
	}
	return appendJSON(b, raw, true)
}

// appendRawMap appends a map of JSON values (a run's extension records)
// as encoding/json does: its keys in order, each value as
// [appendRawJSON] writes it, with own, when not nil, under ownKey in the
// place of m's record there, written as it is (turnkit's own record,
// canonical: see [snapshot]). A head carries one or two records, written
// on every save: through encoding/json they cost a sorted copy of the
// keys and a reflected copy of each value.
func appendRawMap(b []byte, m map[string]json.RawMessage, ownKey string, own json.RawMessage, ok bool) ([]byte, bool) {
	if !ok {
		return b, false
	}
	if m == nil && own == nil {
		return append(b, "null"...), true
	}
	var small [4]string
	keys := small[:0]
	for k := range m {
		if own == nil || k != ownKey {
			keys = append(keys, k)
		}
	}
	if own != nil {
		keys = append(keys, ownKey)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		if own != nil && k == ownKey {
			b = append(b, own...)
		} else if b, ok = appendRawJSON(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendList appends a slice that encoding/json encodes.
func appendList(b []byte, l reflect.Value, ok bool) ([]byte, bool) {
	switch {
	case !ok:
		return b, false
	case l.IsNil():
		return append(b, "null"...), true
	case l.Len() == 0:
		return append(b, "[]"...), true
	}
	return appendJSON(b, l.Interface(), true)
}

// appendJSON appends json.Marshal(v).
func appendJSON(b []byte, v any, ok bool) ([]byte, bool) {
	if !ok {
		return b, false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, out...), true
}

// decisionFields are the members of a decision.
var decisionFields = wire.FieldsOf(reflect.TypeFor[Decision]())

// appendApprovals appends json.Marshal(l), a list of pending approvals,
// member by member as [approvalFields] lists them; a list with an
// elicitation goes through encoding/json.
func appendApprovals(b []byte, l []Approval, ok bool) ([]byte, bool) {
	if !ok || l == nil {
		return appendList(b, reflect.ValueOf(l), ok)
	}
	for i := range l {
		if l[i].Elicitation != (Elicitation{}) {
			return appendJSON(b, l, true)
		}
	}
	b = append(b, '[')
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		a := &l[i]
		first := true
		for j := range approvalFields.List {
			f := &approvalFields.List[j]
			switch f.GoName {
			case "Tool":
				b = appendKeyString(b, f.Name, a.Tool, first)
			case "CallID":
				b = appendKeyString(b, f.Name, a.CallID, first)
			case "Arguments":
				b = appendKeyString(b, f.Name, a.Arguments, first)
			case "Agent":
				b = appendKeyString(b, f.Name, a.Agent, first)
			case "Seq":
				b = jsonw.AppendInt(appendKey(b, f.Name, first), a.Seq)
			case "OutputSeq":
				b = jsonw.AppendInt(appendKey(b, f.Name, first), a.OutputSeq)
			case "Owner":
				if a.Owner == "" {
					continue
				}
				b = appendKeyString(b, f.Name, a.Owner, first)
			case "Elicitation":
				continue // zero: omitted
			default:
				return b, false // a member added to Approval and not here
			}
			first = false
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendDecisions appends json.Marshal(l), a list of decisions, member by
// member as [decisionFields] lists them; a list with an answer to an
// elicitation goes through encoding/json, and one with an invalid verdict
// fails as encoding/json does.
func appendDecisions(b []byte, l []Decision, ok bool) ([]byte, bool) {
	if !ok || l == nil {
		return appendList(b, reflect.ValueOf(l), ok)
	}
	for i := range l {
		if l[i].Answer != (ElicitationAnswer{}) {
			return appendJSON(b, l, true)
		}
	}
	b = append(b, '[')
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		d := &l[i]
		first := true
		for j := range decisionFields.List {
			f := &decisionFields.List[j]
			switch f.GoName {
			case "Tool":
				b = appendKeyString(b, f.Name, d.Tool, first)
			case "CallID", "Fingerprint", "Message", "Owner":
				v := d.CallID
				switch f.GoName {
				case "Fingerprint":
					v = d.Fingerprint
				case "Message":
					v = d.Message
				case "Owner":
					v = d.Owner
				}
				if v == "" {
					continue
				}
				b = appendKeyString(b, f.Name, v, first)
			case "Verdict":
				if d.Verdict != Approved && d.Verdict != Rejected {
					return b, false // encoding/json's error
				}
				b = appendKeyString(b, f.Name, d.Verdict.String(), first)
			case "Always":
				if !d.Always {
					continue
				}
				b = append(appendKey(b, f.Name, first), "true"...)
			case "Answer":
				continue // zero: omitted
			default:
				return b, false // a member added to Decision and not here
			}
			first = false
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendKeyString appends "name":"value" after the opening brace when
// first, or after a comma.
func appendKeyString(b []byte, name, value string, first bool) []byte {
	return appendString(appendKey(b, name, first), value)
}
